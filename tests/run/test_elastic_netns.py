"""Elastic perseusrun across network namespaces (tests/support/netns_hosts.py: one bridge, a real sshd on port
36666 inside every namespace but perseusrun's). perseusrun and the first worker run in host 0's namespace; every
other worker is started over ssh in its own host's namespace.

Two stories: 4 hosts of 1 slot, one remote worker SIGKILLed mid-epoch, its host leaves discovery, 3 go on, a fifth
host appears and the job grows back to 4; and 2 hosts where the killed host comes back after its blacklist
cooldown. Both end with weights equal to numpy's replay of the committed steps."""

import os
import signal
import time

import numpy as np
import pytest

from run_helpers import PYTHON
from support import elastic as E
from support import netns_hosts

reason = netns_hosts.missing_requirements()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(reason), reason=reason or "ok")]


def _ssh(hosts):
    return ["-p", str(netns_hosts.SSH_PORT), "--ssh-config", hosts.ssh_config]


def test_four_namespaces_kill_one_then_a_fifth_host_grows_the_job_back_torch(tmp_path):
    """Hosts 0-3 train (4 workers, 3 of them over ssh); host 3's worker is SIGKILLed holding after step 8 and host 3
    leaves discovery; 3 go on from the commit after step 6; host 4 appears and joins at the commit after step 9."""
    work = tmp_path / "netns"
    work.mkdir()
    hosts = netns_hosts.start(work, 5)
    try:
        out, result = E.namespaces_lose_one_then_grow_back(
            tmp_path, hosts, netns_hosts.SSH_PORT, ["-x", "ELASTIC_TEST_HOLD=8"],
            [PYTHON, str(E.TRAIN), str(tmp_path), "16", "0.02", "3"], 60)
        for i in (0, 1, 2, 4):
            assert "[{}:0]<stdout>:DONE".format(hosts.addrs[i]) in out, "host {}'s worker finished".format(i)
        sizes = [step["size"] for step in result["history"]]
        # commits after steps 3, 6, 9, ...: steps 7 and 8 ran with 4 workers, were lost with the kill and ran again
        # with 3; host 4 joined at the commit after step 9
        assert sizes == [4] * 6 + [3] * 3 + [4] * 7, sizes
        diff = np.max(np.abs(np.array(result["weights"]) - E.replay(result["history"])))
        assert diff <= 1e-6, diff
    finally:
        netns_hosts.stop(hosts)
    assert not netns_hosts.left_over(hosts)


def test_remote_worker_killed_then_host_back_after_cooldown(tmp_path):
    """2 hosts: the remote worker is SIGKILLed mid-epoch; the local one goes on alone from the last commit; host 1
    comes back after its blacklist cooldown and the job grows back to 2 over ssh."""
    work = tmp_path / "netns"
    work.mkdir()
    hosts = netns_hosts.start(work, 2)
    try:
        script, _ = E.discovery_script(tmp_path, [a + ":1" for a in hosts.addrs])
        job = E.start(["-np", "2", "--min-np", "1", "--max-np", "2", "--host-discovery-script", str(script),
                       "--blacklist-cooldown-range", "1", "2", "--elastic-timeout", "60",
                       "-x", "ELASTIC_TEST_HOLD=8"] + _ssh(hosts) +
                      [PYTHON, str(E.TRAIN), str(tmp_path), "16", "0.02", "3"], tmp_path, prefix=hosts.in_ns(0))
        failed = None
        try:
            E.wait_for(lambda: E.progress(tmp_path) == (8, 2), "2 workers holding after step 8", 120, job)
            remote = E.worker_pid(tmp_path, hosts.addrs[1] + ":0")
            assert remote in hosts.pids_in(1), "the second worker runs in host 1's namespace"
            os.kill(remote, signal.SIGKILL)
            E.wait_for(lambda: E.progress(tmp_path) == (8, 1), "1 worker at step 8", 60, job)
            time.sleep(3.5)  # the cooldown (2 s) ends: the driver plans the grown job and starts host 1's worker again
            (tmp_path / "go.8").write_text("")
            E.wait_for(lambda: E.progress(tmp_path)[1] == 2, "the job grown back to 2 workers", 90, job)
        except AssertionError as error:
            failed = error
        code, out, err = E.finish(job, 120)
        assert failed is None, "{}\n{}".format(failed, err[-4000:])
        assert code == 0, err[-3000:]
        # over ssh, the remote shell reports the kill as 128 + 9
        assert "worker {}:0 exited with code 137".format(hosts.addrs[1]) in err
        result = E.result(tmp_path)
        sizes = [step["size"] for step in result["history"]]
        assert sizes == [2] * 6 + [1] * 3 + [2] * 7, sizes
        assert np.max(np.abs(np.array(result["weights"]) - E.replay(result["history"]))) <= 1e-6
    finally:
        netns_hosts.stop(hosts)
    assert not netns_hosts.left_over(hosts)
