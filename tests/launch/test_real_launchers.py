"""detect() under launchers that really run here: torchrun and Open MPI's mpirun start the processes."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launch_helpers import BASE_ENV

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPORT = str(Path(__file__).with_name("report_env.py"))


def _reports(folder: Path):
    found = sorted((json.loads(p.read_text()) for p in folder.glob("*.json")), key=lambda e: e["rank"])
    return found


def test_torchrun_two_processes(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.fail("torchrun is not installed next to {} (bash dev/test.sh installs torch)".format(sys.executable))
    env = dict(BASE_ENV, REPORT_DIR=str(tmp_path))
    proc = subprocess.run([str(torchrun), "--standalone", "--nnodes", "1", "--nproc_per_node", "2", REPORT], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    reports = _reports(tmp_path)
    assert [(e["launcher"], e["rank"], e["size"], e["local_rank"], e["local_size"], e["node_rank"]) for e in reports] == \
        [("torchrun", 0, 2, 0, 2, 0), ("torchrun", 1, 2, 1, 2, 0)]
    assert all(e["sources"]["local_size"] == "LOCAL_WORLD_SIZE=2" and e["master_port"] for e in reports)


def test_open_mpi_mpirun_two_processes(tmp_path):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.fail("Open MPI's mpirun is not installed (bash dev/test.sh installs openmpi-bin)")
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    env = dict(BASE_ENV, REPORT_DIR=str(tmp_path))
    proc = subprocess.run([mpirun] + root + ["-np", "2", "-H", "localhost:2", sys.executable, REPORT], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    reports = _reports(tmp_path)
    assert [(e["launcher"], e["rank"], e["size"], e["local_rank"], e["local_size"]) for e in reports] == \
        [("openmpi", 0, 2, 0, 2), ("openmpi", 1, 2, 1, 2)]
    assert reports[1]["sources"]["rank"] == "OMPI_COMM_WORLD_RANK=1"
