"""Runs perseus.launch.detect() in a fresh process with a chosen environment."""

import json
import os
import subprocess
import sys
from typing import Dict, List, Optional

# Only what a process needs to start Python: the launcher variables of the machine running the tests
# (a CI runner inside Slurm, say) must not leak into the cases.
BASE_ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "SYSTEMROOT") if k in os.environ}


class Detected:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.returncode = proc.returncode
        self.stderr = proc.stderr
        self.env = json.loads(proc.stdout) if proc.returncode == 0 else None

    def __repr__(self) -> str:
        return "Detected(rc={}, env={}, stderr={!r})".format(self.returncode, self.env, self.stderr)


def run_detect(env: Dict[str, str], argv: Optional[List[str]] = None, python: str = sys.executable,
               extra_env: Optional[Dict[str, str]] = None) -> Detected:
    """detect() in a fresh process with exactly this environment and these appended arguments."""
    full = dict(BASE_ENV, **env)
    full.update(extra_env or {})
    proc = subprocess.run([python, "-m", "perseus.launch"] + list(argv or []), env=full, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    return Detected(proc)
