"""A worker of elastic perseusrun without a framework, for the driver's tests (tests/run/test_elastic.py): it
joins each generation (perseus.horovod_kit.elastic_worker), prints `JOINED generation rank size`, and joins the
next one when the driver's host-update counter moves. ELASTIC_TEST_CRASH=1 makes the last rank of every
generation exit with code 3 right after joining (a worker that crashes on every reset); ELASTIC_TEST_DONE_ON_UPDATE=1
makes it exit 0 instead of joining again (training that ends while the driver plans the next generation)."""

import os
import sys
import time

from perseus.horovod_kit import elastic_worker


def main() -> None:
    crash = os.environ.get("ELASTIC_TEST_CRASH") == "1"
    while True:
        joined = elastic_worker.rendezvous()
        print("JOINED {} {} {}".format(joined.generation, joined.rank, joined.size), flush=True)
        if crash and joined.rank == joined.size - 1:
            print("CRASH on purpose in generation {}".format(joined.generation), flush=True)
            sys.exit(3)
        while elastic_worker.host_updates()[0] <= joined.updates:
            time.sleep(0.1)
        if os.environ.get("ELASTIC_TEST_DONE_ON_UPDATE") == "1":
            print("DONE in generation {}".format(joined.generation), flush=True)
            return


if __name__ == "__main__":
    main()
