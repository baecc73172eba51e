"""perseus.torch.horovod's process sets in a 4-rank job: sets {0,1} (at init), {2,3}, {0,2}; every collective on a
set against the same computation on one process; a set's collective completes while a rank of another set
sleeps; a rank outside a set is refused by name; the job's own collectives go on."""

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "runtime"))
from perseus_harness import launch  # noqa: E402

WORKER = HERE / "workers" / "hvd_process_sets.py"


@pytest.fixture(scope="module")
def ranks():
    return [r.output for r in launch(str(WORKER), 4, timeout=240)]


def test_each_collective_on_a_set_gives_its_members_result(ranks):
    for got in ranks:
        rank = got["rank"]
        members = [0, 1] if rank < 2 else [2, 3]
        t = {m: [float(i + 10 * m) for i in range(4)] for m in members}
        assert (got["set_rank"], got["set_size"]) == (members.index(rank), 2)
        assert got["ids"] == [1, 2, 3]  # Horovod's ids, in registration order, on every rank
        assert got["sum"] == [a + b for a, b in zip(*t.values())]
        assert got["average"] == [(a + b) / 2 for a, b in zip(*t.values())]
        assert got["max"] == [max(a, b) for a, b in zip(*t.values())]
        assert got["gathered"] == [[[m, m]] for m in members]  # stacked: PERSEUS_CHANGE_HVD_ALLGATHER=0
        assert got["broadcast"] == [members[1]] * 3 and got["object"] == {"from": members[1]}
        assert got["reducescatter"] == [[float(sum(m + 1 for m in members))] * 2] * 2
        assert got["grad"] == [2.0 * (rank + 1)] * 3  # Sum's gradient: the set's size (2) x the chain's (rank + 1)
        if rank in (0, 2):
            assert got["even_average"] == [1.0]
        assert "is not in ProcessSet" in got["outsider"], got["outsider"]
        assert got["job_sum"] == [4.0]
        # gradient x = [(rank+1)^2, 1]: averaged over {0,2} = [5, 1]; ranks 1 and 3 keep their own
        expected_grad = 5.0 if rank in (0, 2) else float((rank + 1) ** 2)
        assert got["set_optimizer_weight"] == pytest.approx([1.0 - 0.1 * expected_grad, 0.9])
        assert got["removed"] == [True, True, True, False]


def test_disjoint_sets_do_not_wait_for_each_other(ranks):
    by_rank = {got["rank"]: got for got in ranks}
    assert by_rank[2]["finished_at"] < by_rank[0]["finished_at"] - 3.0  # rank 0 slept 5 s before its collective
    assert by_rank[3]["sum_seconds"] < 3.0 < by_rank[1]["sum_seconds"]
