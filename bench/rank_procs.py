"""Collecting a benchmark's rank processes: wait for all, fail with the first failure's stderr, read rank 0's
report (its last stdout line, JSON)."""

import json
import subprocess
from typing import Any, Sequence


def rank0_report(procs: Sequence[subprocess.Popen], timeout: float, what: str) -> Any:
    outputs = [p.communicate(timeout=timeout) for p in procs]
    for proc, (_, err) in zip(procs, outputs):
        if proc.returncode != 0:
            raise SystemExit("{} failed (rc {}):\n{}".format(what, proc.returncode, err[-4000:]))
    return json.loads(outputs[0][0].strip().splitlines()[-1])
