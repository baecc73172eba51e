"""perseus.torch.horovod gives Horovod's results where it once gave silently wrong ones, on 2 real
processes: broadcast of int8/int16, autograd through the collectives, integer scale factors, async handles
that are pending at submit, allgather/broadcast refused while a rank has joined."""

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

WORKER = HERE / "workers" / "hvd_semantics.py"
SIZE = 2


@pytest.fixture(scope="module", params=["0", "1"], ids=["stack", "concat"])
def ranks(request):
    support = str(HERE.parents[0] / "support")
    results = launch(str(WORKER), SIZE, timeout=240,
                     env={"PERSEUS_CHANGE_HVD_ALLGATHER": request.param,
                          "PYTHONPATH": python_path() + ":" + support})
    return request.param, [r.output for r in results]


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "int32", "bool", "float16"])
def test_broadcast_delivers_every_row(ranks, dtype):
    for got in value(ranks[1], "broadcast_" + dtype):
        assert got["out"] == got["expected"]
        assert got["inplace"] == got["expected"]


def test_allreduce_gradient_is_size_for_sum_and_one_for_average(ranks):
    # d/dx sum(allreduce(x * (r+1))) with Horovod's backward (an allreduce of the gradient with the same op)
    for r, got in enumerate(value(ranks[1], "grad_allreduce")):
        assert got["sum"] == [float(SIZE * (r + 1))] * 3
        assert got["average"] == [float(r + 1)] * 3


def test_broadcast_gradient_is_zero_on_non_root_ranks(ranks):
    grads = value(ranks[1], "grad_broadcast")
    assert grads[0] == [2.0] * 3  # the root: the average of every rank's gradient (all ones) times 2
    assert grads[1] == [0.0] * 3


def test_allgather_output_has_a_gradient_function(ranks):
    mode, found = ranks
    for r, got in enumerate(value(found, "grad_allgather")):
        assert got["has_grad_fn"]
        # out's gradient is `weights` (0..numel-1 in out's layout) on every rank, averaged over ranks; each
        # rank's input gets its own slice: rows 2r, 2r+1 (concatenated) or block r (stacked): the same numbers
        assert got["shape"] == ([SIZE * 2, 3] if mode == "1" else [SIZE, 2, 3])
        assert got["grad"] == [float(6 * r + i) for i in range(6)]


def test_integer_prescale_is_applied_per_rank_before_the_sum(ranks):
    for got in value(ranks[1], "prescale_integer"):
        # Horovod: int32(x * 0.5) on each rank, then the sum: [3, -3, 1, 50] * 2
        assert got == {"out": [6.0, -6.0, 2.0, 100.0], "dtype": "torch.int32"}


def test_integer_postscale_scales_the_sum_in_double_and_truncates(ranks):
    for got in value(ranks[1], "postscale_integer"):
        # the sum [14, -14, 6, 200] * 0.3 in double, truncated to int64
        assert got == {"out": [4.0, -4.0, 1.0, 60.0], "dtype": "torch.int64"}


@pytest.mark.parametrize("case", ["allgather_async_pending_at_submit", "allreduce_async_pending_at_submit"])
def test_async_collectives_are_pending_at_submit(ranks, case):
    for got in value(ranks[1], case):
        assert got["pending_at_submit"], got


def test_async_allgather_result(ranks):
    mode, found = ranks
    for got in value(found, "allgather_async_pending_at_submit"):
        assert got["ends"] == [0.0, float(SIZE - 1)] and got["numel"] == SIZE * 8 * 1024 * 1024


@pytest.mark.parametrize("kind", ["allgather", "broadcast"])
def test_allgather_and_broadcast_raise_while_a_rank_has_joined(ranks, kind):
    got = value(ranks[1], "join_" + kind)
    assert got[0]["raised"] is None
    for other in got[1:]:
        assert other["raised"] and "join" in other["raised"], other
    # every rank returns the same last-joined rank, which is not the first to join (Horovod)
    assert {g["join_returned"] for g in got} == {SIZE - 1}


def test_collectives_work_after_the_joins(ranks):
    assert value(ranks[1], "after_join_collectives_work") == [[float(SIZE)] * 2] * SIZE


def test_sparse_gradients_are_averaged_as_horovod_does(ranks):
    # rank 0 uses rows 0, 1, 1 with weight 1; rank 1 rows 1, 5 with weight 2: the average over 2 ranks
    expected = [0.5, 0.5, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    for got in value(ranks[1], "sparse_gradients"):
        assert got["False"] == {"is_sparse": True, "grad": expected}
        assert got["True"] == {"is_sparse": True, "grad": expected}


def test_per_rank_first_dimensions_concatenate_or_are_refused_naming_the_variable(ranks):
    mode, found = ranks
    if mode == "1":
        assert value(found, "allgather_per_rank_sizes") == [[1.0] * 6] * SIZE
    else:
        for entry in found:
            assert not entry["allgather_per_rank_sizes"]["ok"]
            assert "PERSEUS_CHANGE_HVD_ALLGATHER=1" in entry["allgather_per_rank_sizes"]["error"]
