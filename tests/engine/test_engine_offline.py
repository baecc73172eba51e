"""PERSEUS_OFFLINE_NEG=1 in perseusrun jobs: the ranks switch to the agreed plan after two repeated steps,
get correct results with submission orders that differ by rank, stop negotiating, and a rank that leaves
the plan alone fails every rank with one message, ranks that leave it together negotiate again."""

import pytest

from engine_helpers import perseusrun, reports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


@pytest.mark.parametrize("np", [2, 4])
def test_offline_plan_same_results_no_more_negotiation(engine_library, np):
    proc = perseusrun(engine_library, np, "offline", env={"PERSEUS_OFFLINE_NEG": "1", "PERSEUS_ALLREDUCE_DTYPE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == np
    ranks = sum(range(np))
    for r in found:
        expected = [[float(ranks + np * step), float(np), float(ranks), ranks / np] for step in range(8)]
        assert r["sums"] == expected  # small integers and quarters: exact in fp32
        assert r["switched"]["offline"] == 1 and r["switched"]["plan_collectives"] == 4
        # five steps after the switch: no control allgather, every batch from the plan
        assert r["info"]["negotiation_cycles"] == r["switched"]["negotiation_cycles"]
        assert r["info"]["offline_batches"] >= r["switched"]["offline_batches"] + 5 * 2


def test_offline_off_by_default_keeps_negotiating(engine_library):
    proc = perseusrun(engine_library, 2, "offline", env={"PERSEUS_ALLREDUCE_DTYPE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r in reports(proc.stdout):
        assert r["info"]["offline"] == 0 and r["info"]["offline_batches"] == 0
        assert r["info"]["negotiation_cycles"] > r["switched"]["negotiation_cycles"]


@pytest.mark.parametrize("np", [2, 4])
def test_ranks_leaving_the_plan_together_negotiate_again(engine_library, np):
    proc = perseusrun(engine_library, np, "offline_phases", env={"PERSEUS_OFFLINE_NEG": "1", "PERSEUS_ALLREDUCE_DTYPE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == np
    ranks = sum(range(np))
    for r in found:
        assert r["sums"] == [[float(ranks + np * step), float(np), float(ranks), ranks / np] for step in range(6)]
        assert r["evals"] == [[float(ranks + np * step), [v for k in range(np) for v in (k, step)]] for step in range(4)]
        # the evaluation phase became a plan of its own, training a third one
        assert r["in_eval"]["renegotiations"] == 1 and r["in_eval"]["plan_collectives"] == 2
        assert r["info"]["renegotiations"] == 2 and r["info"]["offline"] == 1 and r["info"]["plan_collectives"] == 4


def test_a_rank_leaving_the_plan_alone_fails_every_rank_with_its_message(engine_library):
    # rank 1 waits GLOO_TIMEOUT_SECONDS for the others to leave the plan too; rank 0's step waits for rank 1
    proc = perseusrun(engine_library, 2, "offline_leave", env={"PERSEUS_OFFLINE_NEG": "1", "GLOO_TIMEOUT_SECONDS": "4"})
    found = reports(proc.stdout)
    assert len(found) == 2, proc.stdout + proc.stderr[-3000:]
    first = [r["errors"][0] for r in found]
    assert all(kind == "MismatchError" for kind, _ in first), first
    assert first[0][1] == first[1][1]  # one message on every rank
    message = first[0][1]
    assert "PERSEUS_OFFLINE_NEG=1: rank 1 left the plan of 4 collectives" in message
    assert "'g/a' is submitted as allreduce float32[8] sum but the plan holds allreduce float32[7] sum" in message
    assert "the other ranks did not leave the plan too within GLOO_TIMEOUT_SECONDS=4" in message
    assert "unset PERSEUS_OFFLINE_NEG" in message
