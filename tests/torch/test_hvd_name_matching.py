"""perseus.torch.horovod matches collectives by name, as Horovod does, on 2 real processes: a collective one rank
submits before a barrier and another after it runs once both have it; async calls in different orders pair up by
name; a second collective under a name in flight is refused (ValueError); ranks that wait for collectives nobody
else submitted raise instead of hanging. Before name matching, each of these raised a mismatch or gave none."""

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "runtime"))
sys.path.insert(0, str(HERE.parents[0] / "support"))
from perseus_harness import launch, python_path  # noqa: E402
from hvd_cases import value  # noqa: E402

WORKER = HERE / "workers" / "hvd_name_matching.py"
SIZE = 2


@pytest.fixture(scope="module")
def ranks():
    support = str(HERE.parents[0] / "support")
    results = launch(str(WORKER), SIZE, timeout=240, env={"PYTHONPATH": python_path() + ":" + support})
    return [r.output for r in results]


def test_a_collective_issued_on_either_side_of_a_barrier_runs_once_all_have_it(ranks):
    for got in value(ranks, "issued_on_either_side_of_a_barrier"):
        assert got == [3.0, 3.0, 3.0]  # 1 + 2


def test_a_second_collective_under_a_name_in_flight_is_refused(ranks):
    for got in value(ranks, "duplicate_name_in_flight"):
        assert len(got["refused"]) == 1
        assert "'in.flight' is already in flight" in got["refused"][0]
        assert got["sum"] == [2.0] * 4  # the first one ran, once, with both ranks
        assert got["again"] == [2.0] * 4


def test_a_name_longer_than_the_record_is_released_by_synchronize(ranks):
    for got in value(ranks, "a_long_name_is_free_again_after_synchronize"):
        assert got == [[2.0, 2.0], [2.0, 2.0]]


def test_async_calls_in_different_orders_pair_up_by_name(ranks):
    for got in value(ranks, "submitted_in_different_orders"):
        assert got == {"a": [3.0, 3.0], "b": [30.0] * 5}
    for r, got in enumerate(value(ranks, "mixed_kinds_in_different_orders")):
        assert got["gather"] == [0.0, 0.0, 1.0, 1.0]  # rank 0 then rank 1, stacked or concatenated alike
        assert got["bcast"] == [float(SIZE - 1 + 7)] * 3
        assert got["sum"] == [2.0, 2.0]


def test_a_rank_polling_in_a_loop_lets_a_deferred_collective_run(ranks):
    for got in value(ranks, "polling_lets_a_deferred_collective_run"):
        assert got == {"a": [3.0, 3.0], "b": [10.0] * 3}


def test_a_moment_of_apparent_stall_lets_another_thread_submit(ranks):
    for got in value(ranks, "another_thread_submits_what_the_others_wait_for"):
        assert got == {"w": [2.0, 2.0], "p": [2.0, 2.0, 2.0]}


def test_ranks_waiting_for_collectives_nobody_else_submitted_all_raise(ranks):
    found = value(ranks, "waiting_for_what_no_other_rank_submits")
    for got in found:
        assert got["error"] is not None, "a rank did not raise"
        assert "rank 0 waits for" in got["error"] and "'only.rank0'" in got["error"]
        assert "rank 1 calls barrier" in got["error"]
        assert got["after"] == [2.0]
    assert found[0]["error"] == found[1]["error"]  # the same words on every rank


def test_join_takes_part_in_named_async_allreduces(ranks):
    found = value(ranks, "join_with_named_async")
    assert found[0]["a"] == [2.0] * 3  # the joined rank contributes zeros
    assert found[0]["b"] == [3.0] * 4
    assert all(got["join"] == 0 for got in found)  # rank 0 joined last


def test_a_rank_that_joins_with_a_deferred_collective_contributes_its_own_data(ranks):
    for got in value(ranks, "joined_rank_keeps_what_it_submitted_before_joining"):
        assert got["sum"] == [5.0 + 7.0 * (SIZE - 1)] * 3  # not 7 * (SIZE - 1): rank 0's data, not zeros
        assert got["join"] == SIZE - 1
