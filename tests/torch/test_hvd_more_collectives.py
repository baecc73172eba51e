"""reducescatter, alltoall, grouped collectives and sparse_allreduce_async of perseus.torch.horovod give Horovod's
results (values, splits, gradients) on 2 real processes."""

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "support"))
from hvd_cases import value  # noqa: E402
from perseus_harness import launch, python_path  # noqa: E402


@pytest.fixture(scope="module", params=["0", "1"], ids=["stack", "concat"])
def ranks(request):
    results = launch(str(HERE / "workers" / "hvd_more_collectives.py"), 2, timeout=240,
                     env={"PERSEUS_CHANGE_HVD_ALLGATHER": request.param,
                          "PYTHONPATH": python_path() + ":" + str(HERE.parents[0] / "support")})
    return request.param, [r.output for r in results]


def test_reducescatter(ranks):
    total = [3.0 * v for v in range(10)]  # rank 0's tensor times 1 plus rank 1's times 2
    got = value(ranks[1], "reducescatter")
    assert got[0]["sum"] == total[:6] and got[1]["sum"] == total[6:]  # 5 rows: 3 to rank 0, 2 to rank 1
    assert got[0]["average"] == [v / 2 for v in total[:6]]
    assert got[0]["int_prescale"] == [2.0] and got[1]["int_prescale"] == [4.0]  # int32(3*0.5)=1, int32(5*0.5)=2
    assert got[1]["async"] == total[6:]
    assert got[0]["grouped"] == [total[:6], [0.0, 3.0]] and got[1]["grouped"] == [total[6:], [6.0, 9.0]]
    for g in got:  # Horovod: the allgather of the output gradient, times size for Sum
        assert g["grad"] == [2.0] * 8


def test_alltoall(ranks):
    got = value(ranks[1], "alltoall")
    assert got[0]["equal"] == [0.0, 1.0, 10.0, 11.0] and got[1]["equal"] == [2.0, 3.0, 12.0, 13.0]
    assert got[0]["uneven"] == [0.0, 10.0, 11.0] and got[0]["received"] == [1, 2]
    assert got[1]["uneven"] == [1.0, 2.0, 3.0, 12.0, 13.0] and got[1]["received"] == [3, 2]
    assert got[0]["received_dtype"] == "torch.int32"
    # every rank's output is [2 rows of rank 0, 2 rows of rank 1] weighted [1, 2, 3, 4]: sender s's rows get
    # weights 2s+1, 2s+2 back from both receivers, times its factor s+1
    assert got[0]["grad"] == [1.0, 2.0, 1.0, 2.0] and got[1]["grad"] == [6.0, 8.0, 6.0, 8.0]


def test_grouped_allreduce(ranks):
    for g in value(ranks[1], "grouped_allreduce"):
        assert g["out"] == [[3.0] * 3, [6.0] * 4] and g["async"] == g["out"]
        assert g["inplace"] == [[1.5] * 3, [3.0] * 4]
        assert g["grad"] == [6.0, 6.0]  # (1 + 2) per element, summed over 2 ranks


def test_grouped_allgather_follows_the_allgather_mode(ranks):
    mode, found = ranks
    for g in value(found, "grouped_allgather"):
        assert g == [[0.0, 0.0, 1.0, 1.0], [5.0, 5.0, 6.0, 6.0]]  # the same numbers stacked or concatenated


def test_sparse_allreduce(ranks):
    for g in value(ranks[1], "sparse_allreduce"):
        assert g["is_sparse"]
        assert g["sum"] == [1.0, 1.0, 2.0, 2.0, 0.0, 0.0, 2.0, 2.0]
        assert g["average"] == [0.5, 0.5, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]
