"""perseus.tensorflow.horovod against Horovod 0.28's behaviour in 2-rank perseusrun jobs (free ports):
collectives the ranks disagree on fail on every rank, promptly (GLOO_TIMEOUT_SECONDS=60 is never waited
out), with Horovod's error type, and the engine keeps working afterwards; Horovod's API surface (dtype sets,
reduce ops, alltoall, reducescatter, in-place broadcast, object collectives, capability queries) and the
gradients Horovod registers for its collective ops."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from test_tf_horovod_runs import free_ports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

WORKER = Path(__file__).resolve().parent / "workers" / "tf_horovod_cases.py"
TAG = re.compile(r"\[(\d+)\]<stdout>:REPORT ")
PROMPT_SECONDS = 20  # far below GLOO_TIMEOUT_SECONDS=60: nobody waited for a collective that never came


def run_cases(case: str, extra_env: Dict[str, str] = None) -> List[Dict]:
    master, store = free_ports(2)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PERSEUS_", "GLOO_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "OMPI_", "HOROVOD_"))}
    env.update({"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(store), "GLOO_TIMEOUT_SECONDS": "60",
                "TF_CPP_MIN_LOG_LEVEL": "3", "PERSEUS_ALLREDUCE_DTYPE": "1"})
    env.update(extra_env or {})
    perseusrun = str(Path(sys.executable).with_name("perseusrun"))
    proc = subprocess.run([perseusrun, "-np", "2", "--", sys.executable, str(WORKER), case], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = [json.JSONDecoder().raw_decode(proc.stdout[m.end():])[0] for m in TAG.finditer(proc.stdout)]
    assert len(found) == 2, proc.stdout[-3000:]
    return sorted(found, key=lambda r: r["rank"])


@pytest.fixture(scope="module")
def disagree(ops):
    return run_cases("disagree")


def test_shapes_with_equal_element_counts_fail_on_every_rank(disagree):
    # [17, 1311] vs [17, 23, 57]: 22287 elements each; Horovod raises FailedPreconditionError on every rank
    for r in disagree:
        assert r["shape"]["error"] == "FailedPreconditionError", r["shape"]
        assert "does not match" in r["shape"]["message"], r["shape"]
        assert r["shape"]["seconds"] < PROMPT_SECONDS
        assert r["after_shape"] == [2.0, 4.0]


@pytest.mark.parametrize("check", ["dtype", "scalar_gather", "root", "op"])
def test_a_refusal_on_one_rank_fails_the_other_promptly(disagree, check):
    waiting, refusing = disagree[0][check], disagree[1][check]
    assert waiting["error"] == "FailedPreconditionError", waiting  # the engine's mismatch, as Horovod's
    assert waiting["seconds"] < PROMPT_SECONDS, waiting
    local = ("NotImplementedError",) if check == "op" else ("InvalidArgumentError", "TypeError")
    assert refusing["error"] in local, refusing  # its own, local error
    assert refusing["seconds"] < PROMPT_SECONDS, refusing
    assert all(r["after_" + check.split("_")[0]] == [2.0, 4.0] for r in disagree)


@pytest.fixture(scope="module")
def api(ops):
    return run_cases("api")


def test_reduce_ops_and_integer_arithmetic_as_horovod(api):
    for r in api:
        assert r["min"] == [[1, 5], [7, 2]] and r["max"] == [[2, 6], [8, 3]]
        assert r["product"] == [6.0, 12.0]
        assert r["int_average"] == [3, 10]  # (3 + 4) / 2 and (10 + 11) / 2, truncated as Horovod
        assert r["int_prescale"] == [2, 10]  # prescale per rank before the sum: int(3 * 0.5) * 2
        assert r["int8_sum"] == [-56, -6]  # 100 + 100 wraps in int8 as in Horovod


def test_dtype_sets_as_horovod(api):
    for r in api:
        allowed = {"uint8", "int8", "int32", "int64", "float16", "float32", "float64", "bfloat16"}
        assert {d for d, e in r["allreduce_dtypes"].items() if e == "ok"} == allowed, r["allreduce_dtypes"]
        for name, seen in r["move_dtypes"].items():
            one, two = (1.0, 1.0) if name == "bool" else (1.0, 2.0)
            assert seen["gather"] == [[one, one], [two, two], [two, two]], (name, seen)
            expected = [[1.0, 1.0], [1.0, 1.0]] if name == "bool" else [[6.0, 8.0], [10.0, 12.0]]
            assert seen["broadcast"] == expected, (name, seen)


def test_alltoall_reducescatter_and_inplace_broadcast(api):
    zero, one = api
    assert zero["alltoall"] == {"out": [[0, 1], [10, 11], [12, 13]], "received": [1, 2]}
    assert one["alltoall"] == {"out": [[2, 3], [4, 5], [14, 15]], "received": [2, 1]}
    assert zero["alltoall_equal"] == [1, 11] and one["alltoall_equal"] == [2, 12]
    assert zero["reducescatter"] == [[0.0, 2.0], [4.0, 6.0]] and one["reducescatter"] == [[8.0, 10.0]]
    for r in api:
        assert r["broadcast_"] == [[2.0, 2.0]] and r["var_after"] == [2.0, 2.0]
        assert r["ops"] == [r["rank"], 2, r["rank"], 2]
        assert r["grouped_allgather"] == [[0, 1], [[0, 0], [1, 1]]]
        assert r["allgather_object"] == [{"rank": 0}, {"rank": 1}]
        assert r["broadcast_object"] == {"from": 1}


def test_capability_queries_tell_the_truth_and_an_unregistered_process_set_is_refused(api):
    for r in api:
        assert r["built"] == {"ccl": False, "nccl": 0, "gloo": True, "mpi": False, "cuda": False}
        assert r["process_set"]["error"] == "ValueError"  # never added: hvd.add_process_set names the fix
        assert "not a registered process set" in r["process_set"]["message"]
        assert "hvd.add_process_set" in r["process_set"]["message"]


def test_gradients_of_the_collectives_as_horovod(ops):
    zero, one = run_cases("grads")
    assert zero["allreduce_sum"] == [2.0] * 3 and one["allreduce_sum"] == [4.0] * 3  # sum of ones, times r + 1
    assert zero["allreduce_average"] == [1.0] * 3 and one["allreduce_average"] == [2.0] * 3
    # the averaged output gradient (1.5 x [[0, 1], [2, 3], [4, 5]]), each rank its own rows
    assert zero["allgather"] == [[0.0, 1.5]] and one["allgather"] == [[3.0, 4.5], [6.0, 7.5]]
    assert zero["broadcast"] == [0.0, 0.0] and one["broadcast"] == [1.5, 1.5]  # root 1 only
    assert zero["allreduce_tf_function"] == [2.0, 2.0] == one["allreduce_tf_function"]


def check_keras(reports: List[Dict], major: int, package: str) -> None:
    for r in reports:
        assert (r["keras_major"], r["keras_package"]) == (major, package)
        assert r["standalone_same"]
        assert r["who"] == [r["rank"], 2, r["rank"], 2, 1, True]
        assert r["allreduce"] == [1.5, 3.0] and r["allreduce_sum"] == [3.0]
        assert r["allgather"] == [[0], [1]] and r["broadcast"] == [10.0]
        assert r["bgv"] == "RuntimeError"  # eager: no global variables, the message names the callback
        # 0.05; epochs 1 and 2: 0.05 * 0.5 ** (epoch - 1); epoch 3 (past end_epoch) keeps the last value
        assert r["lrs"] == pytest.approx([0.05, 0.05, 0.025, 0.025]), r["lrs"]
        assert r["loaded_distributed"] and r["loaded_class"] == "SGD"
        assert r["loaded_iterations"] == 16  # the optimizer's state came back with the model
    zero, one = reports
    assert zero["weights"] == one["weights"]  # broadcast at the start, averaged gradients every step
    assert zero["losses"] == one["losses"]  # MetricAverageCallback
    assert zero["losses"][-1] < zero["losses"][0]
    assert zero["best_saved"] is True
    assert zero["loaded_weights"] == one["loaded_weights"]  # the loaded model trains distributed
    # PartialDistributedOptimizer: the shared layer's gradients averaged, the local layer's kept per rank
    assert zero["partial_shared"] == one["partial_shared"]
    assert zero["partial_local"] != one["partial_local"]


def test_keras3_module_functions_load_model_and_callbacks(ops):
    check_keras(run_cases("keras"), 3, "keras")


def test_keras2_module_functions_load_model_and_callbacks(ops):
    pytest.importorskip("tf_keras", reason="tf-keras is installed by the dev/test.sh stage tensorflow-binding")
    check_keras(run_cases("keras", {"TF_USE_LEGACY_KERAS": "1"}), 2, "tf_keras")
