"""perseus.tensorflow.horovod's process sets in a 4-rank perseusrun job: sets {0,1} (made at init), {2,3} and {0,2};
every collective the API offers on each set, for every dtype it offers, against numpy; a collective on {2,3}
completes while {0,1} waits for a rank sleeping 5 s; a rank outside a set gets InvalidArgumentError, a set never
registered (or removed) ValueError; sets are added and removed dynamically; the job's own collectives go on."""
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

from test_tf_horovod_runs import run_job

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

WORKER = Path(__file__).resolve().parent / "workers" / "tf_process_sets.py"
REDUCE_DTYPES = ["uint8", "int8", "int32", "int64", "float16", "float32", "float64"]
MOVE_DTYPES = REDUCE_DTYPES + ["uint16", "int16", "bool"]


def value(rank: int, dtype: str) -> np.ndarray:
    """What rank `rank` contributes (the worker builds the same)."""
    base = (np.arange(6).reshape(2, 3) % 4) + rank + 1
    if dtype == "bool":
        return (base % 2).astype(bool)
    if dtype.startswith("float"):
        return (base * 1.0001).astype(dtype)
    return base.astype(dtype)


def reduced(members: List[int], op: str, dtype: str) -> np.ndarray:
    """Horovod's result over `members`: in the dtype (float sums of two values rounded once), integer Average
    truncated (Horovod's integer arithmetic)."""
    stack = np.stack([value(m, dtype) for m in members])
    if op == "sum":
        return stack.sum(axis=0, dtype=dtype)
    if op == "average":
        if dtype.startswith("float"):
            return (stack.sum(axis=0, dtype=dtype) / np.asarray(len(members), dtype)).astype(dtype)
        return np.trunc(stack.sum(axis=0, dtype=np.float64) / len(members)).astype(dtype)
    return {"min": stack.min, "max": stack.max, "product": stack.prod}[op](axis=0).astype(dtype)


@pytest.fixture(scope="module")
def reports(ops) -> Dict[int, Dict]:
    found = run_job("sets", worker=WORKER, np=4)
    return {r["rank"]: r for r in found}


def check_set(got: Dict, members: List[int], rank: int) -> None:
    me = members.index(rank)
    for dtype in REDUCE_DTYPES:
        for op in ("sum", "average", "min", "max", "product"):
            want = reduced(members, op, dtype)
            assert np.asarray(got["allreduce:%s:%s" % (op, dtype)], dtype).tolist() == want.tolist(), (op, dtype)
            if op in ("sum", "average"):
                assert got["reducescatter:%s:%s" % (op, dtype)] == [want[me].tolist()], (op, dtype)
    for dtype in MOVE_DTYPES:
        rows = [value(m, dtype)[:i + 1] for i, m in enumerate(members)]
        assert got["allgather:" + dtype] == np.concatenate(rows).tolist(), dtype
        assert got["broadcast:" + dtype] == value(members[-1], dtype).tolist(), dtype  # root: a global rank
        assert got["alltoall:" + dtype] == [value(m, dtype)[me].tolist() for m in members], dtype
    f32 = [value(m, "float32") for m in members]
    total = (f32[0] + f32[1]).astype(np.float32)
    assert got["grouped_allreduce"] == [total.tolist(), (f32[0] * 2 + f32[1] * 2).tolist()]
    assert got["grouped_allgather"] == [np.concatenate(f32).tolist(), np.concatenate([f[:1] for f in f32]).tolist()]
    assert got["grouped_reducescatter"] == [[total[me].tolist()], [(f32[0] * 3 + f32[1] * 3)[me].tolist()]]
    assert got["in_function"] == total.tolist()
    assert got["broadcast_object"] == {"from": members[-1]}
    assert got["allgather_object"] == [{"rank": m} for m in members]
    assert got["allreduce_grad"] == [2.0 * (rank + 1)] * 3  # Sum's gradient: the set's size x d(x * (rank + 1))
    assert (got["size_op"], got["included_op"]) == (2, 1)


def test_each_collective_on_a_set_equals_numpy(reports):
    assert sorted(reports) == [0, 1, 2, 3]
    for rank, r in reports.items():
        members = [0, 1] if rank < 2 else [2, 3]
        assert r["ids"] == [1, 2, 3]  # Horovod's ids, in registration order, on every rank
        assert (r["set_rank"], r["set_size"], r["in_even"]) == (members.index(rank), 2, rank in (0, 2))
        assert r["first_sum"] == [float(sum(members))]
        check_set(r["mine"], members, rank)
        if rank in (0, 2):
            check_set(r["even"], [0, 2], rank)
        else:
            assert "even" not in r


def test_disjoint_sets_do_not_wait_for_each_other(reports):
    assert reports[2]["first_finished_at"] < reports[0]["first_finished_at"] - 3.0  # rank 0 slept 5 s first
    assert reports[3]["first_seconds"] < 3.0 < reports[1]["first_seconds"]


def test_gradient_tape_on_a_set_and_the_refusals(reports):
    for rank, r in reports.items():
        # d(x^2)/dx = 2x averaged over {0, 2} on its members; the others keep their own
        assert r["tape_grad"] == (2.0 * (0 + 2) / 2 if rank in (0, 2) else 2.0 * rank)
        for key in ("outsider", "outsider_gather"):
            assert r[key].startswith("InvalidArgumentError: ") and "is not a member" in r[key], r[key]
        assert r["unregistered"].startswith("ValueError: ") and "not a registered process set" in r["unregistered"]
        assert r["after_remove"].startswith("ValueError: ")
        assert "it was closed by hvd.remove_process_set(...)" in r["after_remove"], r["after_remove"]
        assert r["job_sum"] == [4.0] and r["job_sum_after"] == [8.0]


def test_sets_are_added_and_removed_dynamically(reports):
    for rank, r in reports.items():
        assert r["odd_id"] == 4
        if rank in (1, 3):
            assert r["odd_sum"] == [4.0]
        else:
            assert "odd_sum" not in r
        # even, odd, high and low removed once; low again and the global set: False
        assert r["removed"] == [True, True, True, True, False, False]
