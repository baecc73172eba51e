"""perseus.mxnet in 2-rank jobs under perseusrun (free ports on 127.0.0.1): the Horovod API with a Gluon
model, and the dist_sync_perseus KVStore against a 1-process computation of what it must give."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.spellings import NANCHECK_SPELLINGS

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "workers" / "mxnet_cases.py"
_helpers = importlib.util.spec_from_file_location("engine_helpers", REPO_ROOT / "tests" / "engine" / "engine_helpers.py")
helpers = importlib.util.module_from_spec(_helpers)
_helpers.loader.exec_module(helpers)  # type: ignore[union-attr]


def run_job(python: str, case: str, np_: int = 2, extra=None, worker: Path = WORKER):
    master, perseus = helpers.free_ports(2)
    env = helpers.base_env("", dict({"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(perseus)}, **(extra or {})))
    env.pop("PERSEUS_ENGINE_LIBRARY")  # the engine linked into perseus_mxnet's library
    # the checkout's perseus.mxnet sources in front of the installed wheel (which holds the library)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "native" / "runtime"),
                                         str(REPO_ROOT / "native" / "bindings" / "mxnet")])
    proc = subprocess.run([helpers.PERSEUSRUN, "-np", str(np_), "--", python, str(worker), case], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = helpers.reports(proc.stdout)
    assert [r["rank"] for r in found] == list(range(np_)), proc.stdout[-3000:]
    return found


def test_gluon_distributed_trainer_two_ranks(mxnet_python):
    r0, r1 = run_job(mxnet_python, "gluon")
    assert r0["wire_fp16"] == r1["wire_fp16"] == 1  # fp32 gradients travel as fp16 by default
    assert r0["collectives"] >= 30  # at least one engine collective per step
    assert r0["size"] == r1["size"] == 2 and r0["local_size"] == 2 and {r0["local_rank"], r1["local_rank"]} == {0, 1}
    assert r0["before"] != r1["before"]  # the ranks started from different weights
    assert r0["after_broadcast"] == r1["after_broadcast"] == r0["before"]  # rank 0's weights everywhere
    assert r0["final"] == r1["final"]  # every step applied the same averaged gradient
    assert r0["final"] != r0["after_broadcast"]
    for r in (r0, r1):
        losses = r["losses"]
        assert losses[-1] < 0.5 * losses[0], losses
        assert sum(b < a for a, b in zip(losses, losses[1:])) >= len(losses) - 3, losses


def _pushed(rank, op):
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    return base * (rank + 1) - 4.0 * rank if op != "min" else base * (1 - 2 * rank) + rank


def test_kvstore_semantics_against_one_process(mxnet_python):
    reports = run_job(mxnet_python, "kvstore")
    size = 2
    want = {
        "sum": sum(_pushed(r, "sum") for r in range(size)),
        "max": np.max([_pushed(r, "max") for r in range(size)], axis=0),
        "min": np.min([_pushed(r, "min") for r in range(size)], axis=0),
    }
    assert not np.array_equal(want["max"], want["sum"]) and not np.array_equal(want["min"], _pushed(0, "min"))
    for r in reports:
        assert "dist" in r["type"] and r["type"] == "dist_sync_perseus"
        assert r["num_workers"] == size and r["capable_optimizer"] is False
        for op, expected in want.items():
            np.testing.assert_array_equal(np.array(r[op], dtype=np.float32), expected, err_msg=op)
        np.testing.assert_array_equal(np.array(r["list_sum"]), np.full((2, 3), (1 + 10) + (2 + 10)))
        assert r["param_only"] == [7.0] * 4  # rank 0's value on every rank
        assert "param_only=True" in r["param_only_push"]
        assert r["pushpull"] == [3.0] * 3
        assert r["trainer_update_on_kvstore"] is False
        assert r["trainer_losses"][-1] < r["trainer_losses"][0]
    assert reports[0]["trainer_final"] == reports[1]["trainer_final"]


def test_fp32_on_the_wire_with_dtype_1(mxnet_python):
    r0, r1 = run_job(mxnet_python, "gluon", extra={"PERSEUS_ALLREDUCE_DTYPE": "1"})
    assert r0["wire_fp16"] == r1["wire_fp16"] == 0
    assert r0["final"] == r1["final"] and r0["losses"][-1] < 0.5 * r0["losses"][0]


def test_module_fit_with_the_kvstore(mxnet_python):
    r0, r1 = run_job(mxnet_python, "module")
    assert r0["final"] == r1["final"]  # both ranks applied the same summed gradients
    for r in (r0, r1):
        assert r["mse_after"] < 0.25 * r["mse_before"], r


def test_module_fit_with_distributed_optimizer_matches_the_kvstore(mxnet_python):
    r0, r1 = run_job(mxnet_python, "optimizer")
    assert r0["final"] == r1["final"]
    assert r0["mse_after"] < 0.25 * r0["mse_before"]
    # the same averaged gradients as Module.fit with dist_sync_perseus (sum, then 1/(batch x workers))
    assert r0["final"] == run_job(mxnet_python, "module")[0]["final"]


def test_mnist_example_two_ranks(mxnet_python):
    master, perseus = helpers.free_ports(2)
    env = helpers.base_env("", {"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(perseus)})
    env.pop("PERSEUS_ENGINE_LIBRARY")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "native" / "runtime"),
                                         str(REPO_ROOT / "native" / "bindings" / "mxnet")])
    proc = subprocess.run([helpers.PERSEUSRUN, "-np", "2", "--", mxnet_python, "-m",
                           "perseus.mxnet.examples.mxnet_mnist", "--epochs", "3"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [helpers.LINE.match(l) for l in proc.stdout.splitlines()]
    by_rank = {}
    for m in filter(None, lines):
        by_rank.setdefault(int(m.group(1)), []).append(m.group(2))
    assert sorted(by_rank) == [0, 1], proc.stdout[-2000:]
    digests = {[l for l in out if l.startswith("PARAMS ")][0] for out in by_rank.values()}
    assert len(digests) == 1  # identical parameters on both ranks
    for out in by_rank.values():
        losses = [float(l.split()[-1]) for l in out if l.startswith("EPOCH ")]
        assert len(losses) == 3 and losses[2] < losses[0], losses


@pytest.mark.parametrize("spelling", NANCHECK_SPELLINGS)
def test_an_inf_gradient_is_stopped(mxnet_python, spelling):
    """DistributedTrainer.step raises the engine's NaN-check error on every rank under the declared name and under
    every alias (the manual's PERSEUS_ALLREDUCE_NANHECK) alike."""
    for r in run_job(mxnet_python, "nancheck", extra={spelling: "1"}):
        assert r["raised"] is not None, r
        assert "PERSEUS_ALLREDUCE_NANCHECK: the reduced result of" in r["message"] and "not finite" in r["message"], r


def test_an_inf_gradient_trains_on_without_the_check(mxnet_python):
    """The control: without the variable the same step leaves non-finite weights and raises nothing."""
    for r in run_job(mxnet_python, "nancheck"):
        assert r["raised"] is None and r["finite"] is False, r
