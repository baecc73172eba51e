"""hvd.init() under a plain Open MPI `mpirun` (and MPICH's `mpiexec`) with no MASTER_ADDR: perseus's collectives need no
torch.distributed; the engine's MPI bootstrap plugin (shipped beside _perseus_engine.so) agrees rank 0's
address and a free port through MPI itself."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

WORKER = Path(__file__).parent / "workers" / "hvd_mpirun.py"
REPORT = re.compile(r"REPORT ")


def _reports(stdout):
    """REPORT lines found anywhere (mpirun relays the ranks' output through one pipe and can glue lines)."""
    found = [json.JSONDecoder().raw_decode(stdout[m.end():])[0] for m in REPORT.finditer(stdout)]
    return sorted(found, key=lambda r: r["rank"])


@pytest.mark.parametrize("np", [2, 4])
def test_hvd_init_under_plain_mpirun_without_master_addr(np):
    if shutil.which("mpirun") is None:
        pytest.fail("mpirun not found: bash tests/run/install_test_deps.sh installs Open MPI")
    import perseus.torch as package
    plugins = [Path(d) / "libperseus_mpi_openmpi.so" for d in package.__path__]
    if not any(p.is_file() for p in plugins):
        pytest.fail("perseus_torch ships no libperseus_mpi_openmpi.so, a declared part of the wheel: its build "
                    "makes it from recipes/mpi/fetch.sh's headers")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MASTER_", "PERSEUS_", "OMPI_", "PMI", "RANK", "WORLD_SIZE", "LOCAL_"))}
    args = ["mpirun"] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) + [
        "-np", str(np), "--oversubscribe", "--bind-to", "none", "-x", "PYTHONPATH", sys.executable, str(WORKER)]
    proc = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = _reports(proc.stdout)
    assert [r["rank"] for r in found] == list(range(np))
    for r in found:
        assert r["size"] == np and r["local_size"] == np and not r["torch_initialised"]
        assert r["store"] == ["mpi"]
        assert r["sum"] == sum(range(1, np + 1))
        assert r["average"] == pytest.approx([sum(range(np)) / np] * 3, abs=1e-6)
        assert r["gathered"] == list(range(np)) and r["rank0"] == {"from": 0}
        assert r["weights"] == found[0]["weights"]  # every replica took the same averaged steps


def test_hvd_init_under_plain_mpich_without_master_addr():
    """MPICH's Hydra (mpiexec.mpich, PMI_* variables): the wheel's other declared plugin, libperseus_mpi_mpich.so."""
    if shutil.which("mpiexec.mpich") is None:
        pytest.fail("mpiexec.mpich not found: apt-get install mpich (dev/lib.sh installs it)")
    import perseus.torch as package
    if not any((Path(d) / "libperseus_mpi_mpich.so").is_file() for d in package.__path__):
        pytest.fail("perseus_torch ships no libperseus_mpi_mpich.so, a declared part of the wheel")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MASTER_", "PERSEUS_", "OMPI_", "PMI", "RANK", "WORLD_SIZE", "LOCAL_"))}
    proc = subprocess.run(["mpiexec.mpich", "-n", "2", sys.executable, str(WORKER)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = _reports(proc.stdout)
    assert [r["rank"] for r in found] == [0, 1]
    for r in found:
        assert r["size"] == 2 and r["store"] == ["mpi"] and not r["torch_initialised"]
        assert r["sum"] == 3 and r["average"] == pytest.approx([0.5] * 3, abs=1e-6)
        assert r["weights"] == found[0]["weights"]
