"""Helpers for worker scripts: write this rank's results for the test process."""

import faulthandler
import json
import os
import signal
from typing import Any, Dict

# The harness sends SIGUSR1 before it kills a rank that timed out: dump every thread's stack.
faulthandler.register(signal.SIGUSR1, all_threads=True)


def emit(result: Dict[str, Any]) -> None:
    # under a launcher that gives every rank one environment, "{rank}" in the path makes it per rank
    with open(os.environ["PERSEUS_TEST_OUT"].replace("{rank}", os.environ.get("RANK", "0")), "w") as f:
        json.dump(result, f)
