"""perseusrun starting the Horovod API of perseus (perseus.torch.horovod from the runtime branch)."""

import os
import shutil
from pathlib import Path

import pytest

from run_helpers import PYTHON, SCRIPTS, perseusrun, reports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO = Path(__file__).resolve().parents[2]
# perseus.torch from the source tree when no perseus_torch wheel is installed (as tests/runtime do)
PYTHONPATH = os.pathsep.join([str(REPO / "native" / "runtime"), str(REPO / "native" / "bindings" / "torch")])


@pytest.mark.parametrize("mode,np_,ddp_launcher", [("--gloo", 2, "1"), ("--gloo", 4, "0"), ("--mpi", 2, "0")],
                         ids=["gloo-np2", "gloo-np4-perseus-rendezvous", "mpi-np2-perseus-rendezvous"])
def test_hvd_allreduce(mode, np_, ddp_launcher):
    if mode == "--mpi" and shutil.which("mpirun") is None:
        pytest.skip("needs Open MPI (bash dev/test.sh installs openmpi-bin)")
    proc = perseusrun([mode, "-np", str(np_), "--", PYTHON, str(SCRIPTS / "hvd_allreduce.py")],
                      env={"PYTHONPATH": PYTHONPATH, "PERSEUS_USE_DDP_LAUNCHER": ddp_launcher})
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = reports(proc.stdout)
    assert [(r["rank"], r["size"], r["local_rank"], r["local_size"]) for r in got] == [(i, np_, i, np_) for i in range(np_)]
    total = np_ * (np_ + 1) / 2
    assert all(r["sum"] == total and r["avg"] == total / np_ for r in got)
