"""Elastic perseusrun: jobs that survive a lost worker and grow when hosts appear (Horovod's elastic mode).

    perseusrun -np 8 --min-np 4 --max-np 12 --host-discovery-script ./discover_hosts.sh python train.py

discovery.py runs the host discovery script (`host:slots` lines) and keeps the hosts' blacklist; driver.py
starts a worker per assigned slot, watches discovery and the workers, and plans generations; service.py is the
rendezvous service the workers ask (perseus.horovod_kit.elastic_worker is their side). README.md beside
perseus/run and docs/elastic.md tell the user's story.
"""
