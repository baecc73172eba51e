"""perseus.tensorflow.horovod in 2-process perseusrun jobs (free ports): the collectives' results, a
tf.function GradientTape loop with DistributedGradientTape (fp16 compression) and a Keras 3 fit with
hvd.keras.DistributedOptimizer and the three callbacks: ranks start from different weights and end
with identical variables; the loss goes down."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence

import pytest

from support.ports import free_ports  # noqa: F401  (test_tf_horovod_negotiation imports it from here)
from support.spellings import NANCHECK_SPELLINGS

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

WORKER = Path(__file__).resolve().parent / "workers" / "tf_train.py"
TAG = re.compile(r"\[(?:\d+,)?(\d+)\]<stdout>:REPORT ")  # perseusrun's [R] or Open MPI's [J,R]



def run_job(case: str, extra_env: Dict[str, str] = None, mpi: bool = False, args: Sequence[str] = (),
            python: str = sys.executable, worker: Path = WORKER, np: int = 2) -> List[Dict]:
    """The worker's REPORTs of an `np`-rank job (2 by default), launched by the perseusrun next to `python`."""
    master, store = free_ports(2)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PERSEUS_", "GLOO_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "OMPI_"))}
    env.update({"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(store), "GLOO_TIMEOUT_SECONDS": "60",
                "TF_CPP_MIN_LOG_LEVEL": "3"})
    env.update(extra_env or {})
    perseusrun = str(Path(python).with_name("perseusrun"))
    command = [perseusrun] + (["--mpi"] if mpi else []) + ["-np", str(np), "--", str(python), str(worker), case, *args]
    proc = subprocess.run(command, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # anywhere in the output, with raw_decode: Open MPI's --tag-output can glue the ranks' lines together
    found = [json.JSONDecoder().raw_decode(proc.stdout[m.end():])[0] for m in TAG.finditer(proc.stdout)]
    assert len(found) == np, proc.stdout[-3000:]
    return sorted(found, key=lambda r: r["rank"])


def check_collectives(reports: List[Dict]) -> None:
    for r in reports:
        assert (r["size"], r["local_size"]) == (2, 2)
        assert r["sum"] == [3.0, 2.0]  # [1, 0] + [2, 2]
        assert r["average"] == [1.5, 1.0]
        assert r["fp16"] == [1.5, 1.0]
        assert r["int_sum"] == [3]
        assert r["gather"] == [[0, 0], [1, 1], [1, 1]]  # rank 0: one row, rank 1: two
        assert r["broadcast"] == [20.0]  # root 1's value
        assert r["grouped"] == [[3.0, 2.0], [6.0, 4.0]]
        assert r["sparse"] == {"values": [[1.0, 0.0], [2.0, 0.0]], "indices": [0, 1], "dense_shape": [4, 2]}
    assert [r["rank"] for r in reports] == [0, 1]


@pytest.mark.usefixtures("ops")
def test_gradient_tape_loop_on_two_ranks():
    reports = run_job("tape")
    check_collectives(reports)
    assert reports[0]["before"] != reports[1]["before"]  # different initial weights ...
    assert reports[0]["after"] == reports[1]["after"]  # ... identical after broadcast + averaged steps
    for r in reports:
        losses = r["losses"]
        assert losses[-1] < 0.2 * losses[0], losses
        assert all(b <= a * 1.01 for a, b in zip(losses, losses[1:])), losses
        assert r["collectives_issued"] > 30  # every step's gradients went through the engine
        assert r["fp16_wire"]  # PERSEUS_ALLREDUCE_DTYPE unset: fp32 allreduces travel as fp16


@pytest.mark.usefixtures("ops")
@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (apt-get install openmpi-bin)")
def test_gradient_tape_loop_under_perseusrun_mpi():
    reports = run_job("tape", mpi=True)
    check_collectives(reports)
    assert reports[0]["after"] == reports[1]["after"]
    assert reports[0]["losses"][-1] < 0.2 * reports[0]["losses"][0]


@pytest.mark.usefixtures("ops")
def test_keras_fit_with_distributed_optimizer_and_callbacks():
    reports = run_job("keras", {"PERSEUS_ALLREDUCE_DTYPE": "1"})
    assert not any(r["fp16_wire"] for r in reports)  # DTYPE=1: fp32 on the wire
    check_collectives(reports)
    assert reports[0]["after"] == reports[1]["after"]  # weights and optimizer state
    assert reports[0]["losses"] == reports[1]["losses"]  # MetricAverageCallback: averaged logs
    losses = reports[0]["losses"]
    assert losses[-1] < 0.6 * losses[0], losses
    assert reports[0]["optimizer_class"] == "Adam" and reports[0]["keras_major"] == 3
    check_fit_wire(reports, fp16=False)


def check_fit_wire(reports: List[Dict], fp16: bool) -> None:
    """The engine's byte counters during fit: every step's gradients went through the engine, as float16
    (2 bytes an element) by default, as float32 with PERSEUS_ALLREDUCE_DTYPE=1; the fp32 bytes of the
    default run are the broadcast callback's alone (it broadcasts the weights, then weights and optimizer
    state: less than steps x elements x 4 bytes)."""
    for r in reports:
        gradient_bytes = r["steps"] * r["gradient_elements"]
        assert r["steps"] == 24  # 6 epochs of 4 batches
        if fp16:
            assert r["fit_wire"]["float16"] == 2 * gradient_bytes, r["fit_wire"]
            assert r["fit_wire"]["float32"] < 4 * gradient_bytes, r["fit_wire"]
        else:
            assert r["fit_wire"]["float16"] == 0, r["fit_wire"]
            assert r["fit_wire"]["float32"] >= 4 * gradient_bytes, r["fit_wire"]


@pytest.mark.usefixtures("ops")
def test_tf1_graph_with_distributed_adam_and_broadcast_hook():
    reports = run_job("tf1")
    assert reports[0]["before"] != reports[1]["before"]
    assert reports[0]["after"] == reports[1]["after"]  # variables and Adam's slots
    for r in reports:
        losses = r["losses"]
        assert losses[-1] < 0.5 * losses[0], losses
        assert all(b < a for a, b in zip(losses, losses[1:])), losses


@pytest.mark.usefixtures("ops")
@pytest.mark.parametrize("spelling", NANCHECK_SPELLINGS)
def test_an_inf_gradient_is_stopped(spelling):
    """DistributedGradientTape raises the engine's NaN-check error on every rank under the declared name and under
    every alias (the manual's PERSEUS_ALLREDUCE_NANHECK) alike."""
    for r in run_job("nancheck", {spelling: "1"}):
        assert r["raised"] is not None, r
        assert "PERSEUS_ALLREDUCE_NANCHECK: the reduced result of" in r["message"] and "not finite" in r["message"], r


@pytest.mark.usefixtures("ops")
def test_an_inf_gradient_trains_on_without_the_check():
    """The control: without the variable the same step leaves non-finite weights and raises nothing."""
    for r in run_job("nancheck"):
        assert r["raised"] is None and r["finite"] is False, r


@pytest.mark.usefixtures("ops")
@pytest.mark.parametrize("launcher", ["openmpi", "mpich"])
def test_plain_mpirun_without_master_addr(launcher):
    """A plain `mpirun` (Open MPI) / `mpiexec` (MPICH) with no MASTER_ADDR: the wheel's MPI bootstrap plugins agree
    rank 0's address through MPI; the collectives and the training loop give what they give under perseusrun."""
    command = {"openmpi": ["mpirun"] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) +
                          ["-np", "2", "--oversubscribe", "--bind-to", "none"],
               "mpich": ["mpiexec.mpich", "-n", "2"]}[launcher]
    if shutil.which(command[0]) is None:
        pytest.fail("{} not found: bash tests/run/install_test_deps.sh / dev/lib.sh install it".format(command[0]))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PERSEUS_", "GLOO_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "OMPI_", "PMI"))}
    env.update({"TF_CPP_MIN_LOG_LEVEL": "3", "GLOO_TIMEOUT_SECONDS": "60"})
    if launcher == "openmpi":
        command += ["-x", "TF_CPP_MIN_LOG_LEVEL", "-x", "GLOO_TIMEOUT_SECONDS"]
    proc = subprocess.run(command + [sys.executable, str(WORKER), "tape"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = sorted((json.JSONDecoder().raw_decode(proc.stdout[m.end():])[0] for m in re.finditer(r"REPORT ", proc.stdout)),
                   key=lambda r: r["rank"])
    check_collectives(found)
    assert found[0]["after"] == found[1]["after"]
