"""Helpers of tests/caffe: paths, clean launcher environments, mpirun / perseusrun command lines, REPORT lines."""

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from support.ports import free_ports  # noqa: F401  (imported from here by the Caffe tests)

REPO_ROOT = Path(__file__).resolve().parents[2]
RECIPE = REPO_ROOT / "recipes" / "caffe" / "build.sh"
PATCHES = REPO_ROOT / "recipes" / "caffe" / "patches"
BUILD = REPO_ROOT / "native" / "build-caffe"
PERSEUSRUN = str(Path(sys.executable).with_name("perseusrun"))
REPORT = re.compile(r"REPORT (\{[^\n]*\})")
LAUNCHER_PREFIXES = ("PERSEUS_", "GLOO_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "GROUP_", "NODE_RANK", "OMPI_",
                     "PMI_", "MPI_LOCAL", "MV2_", "HYDRA_", "SLURM_", "HOROVOD_")


def clean_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    env["GLOO_TIMEOUT_SECONDS"] = "30"
    env.update(extra or {})
    return env


def mpirun_args(np: int, exported: List[str]) -> List[str]:
    if shutil.which("mpirun") is None:
        pytest.fail("mpirun not found: bash tests/run/install_test_deps.sh installs Open MPI")
    args = ["mpirun"] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) + [
        "-np", str(np), "--oversubscribe", "--bind-to", "none", "--tag-output"]
    for name in exported:
        args += ["-x", name]
    return args


def perseusrun_args(np: int, env: Dict[str, str]) -> List[str]:
    """perseusrun on 127.0.0.1 with free ports (MASTER_PORT and the engine's PERSEUS_MASTER_PORT) set in env."""
    master, store = free_ports(2)
    env.update({"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(store)})
    return [PERSEUSRUN, "-np", str(np), "--"]


def reports(output: str) -> List[dict]:
    return sorted((json.loads(m.group(1)) for m in REPORT.finditer(output)), key=lambda r: r["rank"])
