"""`perseusrun --mpi`: Open MPI's mpirun really starts and numbers the ranks; torch.distributed (Gloo) carries
the tensors, rendezvousing at the MASTER_ADDR/MASTER_PORT perseusrun exported."""

import shutil
import time
import uuid

import psutil
import pytest

from run_helpers import PYTHON, SCRIPTS, perseusrun, processes_with, rank_lines, reports

pytestmark = [pytest.mark.integration, pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs Open MPI (bash dev/test.sh installs openmpi-bin)")]


def test_mpi_allreduce(tmp_path):
    proc = perseusrun(["--mpi", "-np", "2", "--log-dir", str(tmp_path / "logs"), "-x", "EXTRA_VAR=via-mpirun",
                       "--", PYTHON, str(SCRIPTS / "allreduce.py"), "--detect"])
    assert proc.returncode == 0, proc.stderr
    got = reports(proc.stdout)
    assert [r["rank"] for r in got] == [0, 1] and {r["sum"] for r in got} == {3.0}
    for r in got:
        e = r["env"]
        assert e["OMPI_COMM_WORLD_RANK"] == str(r["rank"]), "Open MPI numbered the process"
        assert e["RANK"] == e["OMPI_COMM_WORLD_RANK"] and e["WORLD_SIZE"] == "2", "the shim gave the torchrun variables"
        assert e["EXTRA_VAR"] == "via-mpirun" and e["MASTER_PORT"] != e["PERSEUS_MASTER_PORT"]
        d = r["detect"]
        assert (d["rank"], d["size"], d["local_rank"], d["local_size"]) == (r["rank"], 2, r["rank"], 2)
    assert list((tmp_path / "logs").glob("*/rank.1/stdout")), "mpirun --output-filename wrote the rank logs"


def test_mpi_rank_failure_fails_the_job():
    token = uuid.uuid4().hex
    proc = perseusrun(["--mpi", "-np", "2", "--", PYTHON, str(SCRIPTS / "crash.py"), "--crash-rank", "1", "--code", "3",
                       "--then", "sleep", "--token", token], env={"GLOO_TIMEOUT_SECONDS": "30"}, timeout=240)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)  # mpirun returns the failed rank's status
    lines = rank_lines(proc.stdout)
    helpers = [int(l.split()[2]) for ls in lines.values() for l in ls if l.startswith("PID ")]
    assert len(helpers) == 2
    time.sleep(0.5)
    assert processes_with(token) == []
    assert not [p for p in helpers if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE], \
        "the shim kills what a rank leaves behind"
