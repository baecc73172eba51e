"""Opt-in (AIACC_OPTIN=1, not CI): bench/optin_builds.py's real builds, downloads GBs on a first run.

    AIACC_OPTIN=1 .venv/bin/python -m pytest tests/wheels/test_optin_builds.py -s     # ~5 min when downloaded

The cells: four torch releases x five Pythons, CPU, CUDA 13.0 and the pre-cxx11 torch 2.6.0 with the
real nvcc 12.4 (`aiacc-build toolkit fetch 12.4` first: ~1 GB from Debian, a no-op when present),
built, repaired, installed into a fresh venv and tested, their ops libraries inspected; the pre-cxx11
torch 1.8.0 cells deferred by the planner (no nvcc 10.2). The
probes: the binding compiled CPU-only against torch 1.8.0 for CPython 3.7 and 3.6 (through a newer
backend interpreter) and tested.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aiacc_build.paths import REPO_ROOT

pytestmark = [
    pytest.mark.optin,
]
SCRIPT = REPO_ROOT / "bench" / "optin_builds.py"


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(SCRIPT), "--work", str(tmp_path / "work"), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    print(proc.stdout)
    return proc


def fetch_cuda_124() -> None:
    from aiacc_build.toolkits import fetch_toolkit

    fetch_toolkit("12.4")


def test_cells_build_and_the_old_toolkit_cells_are_deferred(tmp_path):
    fetch_cuda_124()
    proc = run(tmp_path, "--no-probes")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| 2.0.0/") or line.startswith("| 1.5.0/")]
    built = [r for r in rows if "compress fp32->fp16 x2.0 ok" in r]
    assert len(built) == 10 and sum("nvcc 13.0" in r for r in built) == 4
    pre_cxx11 = [r for r in built if "nvcc 12.4" in r]
    assert len(pre_cxx11) == 5 and all("pre-cxx11" in r and "0 with __cxx11" in r for r in pre_cxx11)
    # one binding build serves the five Pythons of torch 2.6.0: four cells re-tag it
    assert sum("binding shared, re-tagged" in r for r in pre_cxx11) == 4
    assert all("SASS sm_75" in r for r in pre_cxx11)  # /usr/local/cuda-13.0 has no cuobjdump to list it
    assert all("no libcudart" in r for r in built if "nvcc" in r)
    deferred = [r for r in rows if "deferred: needs nvcc 10.2" in r]
    assert len(deferred) == 2 and all("pre-cxx11" in r for r in deferred)


def test_only_builds_the_chosen_cells(tmp_path):
    fetch_cuda_124()
    proc = run(tmp_path, "--no-probes", "--only", "2.0.0/torch-2.6.0/cuda12.4/py3.12/*")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| 2.0.0/")]
    assert len(rows) == 1 and "torch 2.6.0+cu124" in rows[0] and "nvcc 12.4" in rows[0]


def test_probes_build_the_binding_for_pre_cxx11_torch_on_37_and_36(tmp_path):
    proc = run(tmp_path, "--no-cells")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    probes = [line for line in proc.stdout.splitlines() if line.startswith("| probe ")]
    assert len(probes) == 2 and all("pre-cxx11" in p and "x2.0 ok" in p for p in probes)
