"""The engine under MPI launchers with no framework: a plain `mpirun -np 2/4` (Open MPI, and MPICH's
mpirun.mpich) with no MASTER_ADDR (rank 0's address and a free port agreed through MPI by the engine's
bootstrap plugin for that MPI) and `perseusrun --mpi`."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine_helpers import WORKER, base_env, free_ports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

MPI_REPORT = re.compile(r"\[1,(\d+)\]<stdout>:REPORT ")
PLAIN_REPORT = re.compile(r"REPORT ")


def mpi_reports(stdout, marker=MPI_REPORT):
    """REPORT lines of the ranks: MPI launchers relay the ranks' output through one pipe and can glue two
    ranks' lines into one (Open MPI's --tag-output, MPICH's Hydra), so reports are found anywhere in it."""
    found = []
    for m in marker.finditer(stdout):
        found.append(json.JSONDecoder().raw_decode(stdout[m.end():])[0])
    return sorted(found, key=lambda r: r["rank"])


def mpirun(library, np, case, env):
    if shutil.which("mpirun") is None:
        pytest.fail("mpirun not found: bash tests/run/install_test_deps.sh installs Open MPI")
    plugin = Path(library).with_name("libperseus_mpi_openmpi.so")
    if not plugin.is_file():
        pytest.fail("no {}: the engine's build makes it from recipes/mpi/fetch.sh's headers".format(plugin))
    full = base_env(library, env)
    assert "MASTER_ADDR" not in full and "PERSEUS_MASTER_PORT" not in full
    exported = ["PERSEUS_ENGINE_LIBRARY", "PYTHONPATH", "GLOO_TIMEOUT_SECONDS"] + sorted(env)
    args = ["mpirun"] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) + [
        "-np", str(np), "--oversubscribe", "--bind-to", "none", "--tag-output"]
    for name in exported:
        args += ["-x", name]
    args += [sys.executable, str(WORKER), case]
    proc = subprocess.run(args, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=180)
    return proc, mpi_reports(proc.stdout)


@pytest.mark.parametrize("np", [2, 4])
def test_plain_mpirun_allreduce_and_allgather(engine_library, np):
    proc, found = mpirun(engine_library, np, "allreduce", {"PERSEUS_ALLREDUCE_DTYPE": "1", "TEST_OP": "sum"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [r["rank"] for r in found] == list(range(np))
    want = sum(float(q + 1) + 0.0001 for q in range(np))
    for r in found:
        assert r["info"]["size"] == np
        assert r["results"]["t/small"][0] == pytest.approx(want, rel=1e-6)
    proc, found = mpirun(engine_library, np, "allgather", {})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(found) == np and all(r["dims"] == [q + 1 if q != 1 else 0 for q in range(np)] for r in found)


@pytest.mark.parametrize("np", [2, 4])
def test_plain_mpich_mpirun(engine_library, np):
    """MPICH's Hydra (mpirun.mpich): PMI_* variables, the MPICH bootstrap plugin."""
    if shutil.which("mpirun.mpich") is None:
        pytest.fail("mpirun.mpich not found: apt-get install mpich (dev/lib.sh installs it)")
    plugin = Path(engine_library).with_name("libperseus_mpi_mpich.so")
    if not plugin.is_file():
        pytest.fail("no {}: the engine's build makes it from recipes/mpi/fetch.sh's headers".format(plugin))
    env = base_env(engine_library, {"PERSEUS_ALLREDUCE_DTYPE": "0", "TEST_OP": "average"})
    proc = subprocess.run(["mpirun.mpich", "-np", str(np), sys.executable, str(WORKER), "allreduce"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = mpi_reports(proc.stdout, PLAIN_REPORT)
    assert [r["rank"] for r in found] == list(range(np))
    want = sum(float(q + 1) * 10 for q in range(np)) / (10 * np)  # fp16 on the wire: the 0.0001 is gone
    for r in found:
        assert r["info"]["size"] == np and r["info"]["intra_fp16"] == 1
        assert r["results"]["t/small"][0] == pytest.approx(want, abs=1e-6)
        # Debian's MPICH library, loaded by the engine (the plugin names none): libmpich.so.12
        assert [Path(m).name.startswith("libmpich.so.12") for m in r["mpi_libraries"]] == [True], r["mpi_libraries"]


PYPI_MPICH = "mpich==5.0.2"  # MPICH's own build on PyPI: libmpi.so.12, not Debian's libmpich.so.12


@pytest.mark.optin("downloads MPICH's PyPI wheel (mpich==5.0.2) into a fresh venv")
def test_pypi_mpich_whose_library_is_libmpi_so_12(engine_library, tmp_path):
    """Under PyPI's MPICH (mpiexec from its wheel, its lib/ on LD_LIBRARY_PATH) the engine loads that MPICH's
    libmpi.so.12 for the same plugin, and the job agrees rank 0's address through it."""
    venv = tmp_path / "mpich"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", PYPI_MPICH], check=True, timeout=600)
    lib = venv / "lib"
    assert (lib / "libmpi.so.12").exists()
    env = base_env(engine_library, {"PERSEUS_ALLREDUCE_DTYPE": "1", "TEST_OP": "sum", "LD_LIBRARY_PATH": str(lib)})
    proc = subprocess.run([str(venv / "bin" / "mpiexec"), "-n", "2", sys.executable, str(WORKER), "allreduce"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = mpi_reports(proc.stdout, PLAIN_REPORT)
    assert [r["rank"] for r in found] == [0, 1]
    for r in found:
        assert r["results"]["t/small"][0] == pytest.approx(1.0001 + 2.0001, rel=1e-6)
        assert r["mpi_libraries"] == [str((lib / "libmpi.so.12").resolve())] or \
            [Path(m).parent for m in r["mpi_libraries"]] == [lib.resolve()], r["mpi_libraries"]


def test_perseusrun_mpi_mode(engine_library):
    if shutil.which("mpirun") is None:
        pytest.fail("mpirun not found: bash tests/run/install_test_deps.sh installs Open MPI")
    master, store = free_ports(2)
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("perseusrun")), "--mpi", "-np", "2", "--", sys.executable, str(WORKER),
         "broadcast"],
        env=base_env(engine_library, {"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(store)}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = mpi_reports(proc.stdout)
    assert len(found) == 2, proc.stdout[-2000:]
    assert all(r["values"] == [100.0 + i for i in range(5)] for r in found)
