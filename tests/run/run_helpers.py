"""Runs the installed perseusrun and reads what its ranks printed."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

SCRIPTS = Path(__file__).resolve().with_name("scripts")
PERSEUSRUN = str(Path(sys.executable).with_name("perseusrun"))
PYTHON = sys.executable
BASE_ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
LINE = re.compile(r"^\[(\d+(?:,\d+)?)\]<(stdout|stderr)>:(.*)$")
# a report anywhere in the output: mpirun's --tag-output can glue two ranks' lines into one
REPORT = re.compile(r"\[(?:\d+,)?(\d+)\]<stdout>:REPORT ")


def perseusrun(args: List[str], env: Optional[Dict[str, str]] = None, timeout: float = 300,
               prefix: Optional[List[str]] = None) -> subprocess.CompletedProcess:
    full = dict(BASE_ENV, **(env or {}))
    return subprocess.run((prefix or []) + [PERSEUSRUN] + args, env=full, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)


def rank_lines(stdout: str) -> Dict[str, List[str]]:
    """{'0': [...], '1': [...]} from `[R]<stdout>:line` (perseusrun) or `[1,R]<stdout>:line` (mpirun)."""
    lines: Dict[str, List[str]] = {}
    for line in stdout.splitlines():
        match = LINE.match(line)
        if match and match.group(2) == "stdout":
            lines.setdefault(match.group(1).split(",")[-1], []).append(match.group(3))
    return lines


def reports(stdout: str) -> List[dict]:
    found = []
    for match in REPORT.finditer(stdout):
        found.append(dict(json.JSONDecoder().raw_decode(stdout[match.end():])[0], printed_as=match.group(1)))
    return sorted(found, key=lambda r: r["rank"])


def processes_with(token: str) -> List[int]:
    """Live processes whose command line contains `token` (from /proc, so grandchildren count too)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and token in " ".join(proc.info["cmdline"] or []):
                found.append(proc.info["pid"])
        except psutil.Error:
            continue
    return found
