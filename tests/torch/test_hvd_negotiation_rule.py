"""The rule perseus.torch.horovod matches collectives by (_negotiation.agree), on tables of records as one
exchange gives them: what runs, what runs without a second exchange, and when the ranks are stalled."""

import pytest

pytest.importorskip("torch")

from perseus.torch.horovod import _negotiation as N  # noqa: E402


def record(rank, name, mode, deferred=(), kind=N.K_ALLREDUCE):
    row = N.make_row(kind, name, shape=(4,), digest_=N.digest(name))
    row[N.MODE] = mode
    row[N.PENDING_COUNT] = len(deferred)
    row[N.PENDING: N.PENDING + len(deferred)] = [N.digest(d) for d in deferred]
    return N.decode(rank, row)


def keys(*names):
    return [N.digest(n) for n in names]


def test_every_rank_asking_for_one_collective_runs_it_in_this_exchange():
    verdict = N.agree([record(0, "a", N.MODE_DEFER), record(1, "a", N.MODE_BLOCK)])
    assert verdict.runnable == keys("a") and verdict.in_one_exchange == keys("a") and not verdict.stalled


def test_a_collective_one_rank_deferred_runs_when_the_other_asks_for_it():
    verdict = N.agree([record(0, "barrier", N.MODE_BLOCK, deferred=["x"], kind=N.K_BARRIER),
                       record(1, "x", N.MODE_DEFER)])
    assert verdict.runnable == keys("x")
    assert verdict.in_one_exchange == []  # rank 0's record of x is not in this table: a second exchange
    assert not verdict.stalled


def test_different_async_calls_defer_without_stalling():
    verdict = N.agree([record(0, "a", N.MODE_DEFER), record(1, "b", N.MODE_DEFER)])
    assert verdict.runnable == [] and not verdict.stalled


def test_crossed_orders_run_both_in_the_first_ranks_order():
    verdict = N.agree([record(0, "b", N.MODE_DEFER, deferred=["a"]), record(1, "a", N.MODE_DEFER, deferred=["b"])])
    assert verdict.runnable == keys("a", "b")


def test_blocked_and_waiting_ranks_with_nothing_in_common_are_stalled():
    table = [record(0, "only0", N.MODE_WAIT, deferred=["only0"]), record(1, "barrier", N.MODE_BLOCK, kind=N.K_BARRIER)]
    verdict = N.agree(table)
    assert verdict.stalled and verdict.runnable == []
    message = N.stall_message(table)
    assert "rank 0 waits for the allreduce 'only0' it submitted" in message
    assert "rank 1 calls barrier 'barrier'" in message


def test_a_polling_rank_is_not_stalled():
    verdict = N.agree([record(0, "p", N.MODE_POLL, deferred=["p"]),
                       record(1, "barrier", N.MODE_BLOCK, kind=N.K_BARRIER)])
    assert not verdict.stalled


def test_a_waiting_rank_is_not_asking_again_for_what_it_waits_for():
    # its record names what it waits for, but only its deferred list counts: the wait does not add a second copy
    verdict = N.agree([record(0, "w", N.MODE_WAIT, deferred=["w"]), record(1, "w", N.MODE_DEFER)])
    assert verdict.runnable == keys("w") and verdict.in_one_exchange == []


def test_joined_ranks_count_as_having_everything():
    verdict = N.agree([record(0, "join", N.MODE_JOINED, kind=N.K_JOIN), record(1, "a", N.MODE_DEFER)])
    assert verdict.runnable == keys("a") and verdict.in_one_exchange == keys("a")
    assert N.agree([record(0, "join", N.MODE_JOINED), record(1, "join", N.MODE_JOINED)]).runnable == []


def test_records_are_matched_by_the_whole_name_not_its_first_56_bytes():
    long_a, long_b = "x" * 60 + "a", "x" * 60 + "b"
    verdict = N.agree([record(0, long_a, N.MODE_DEFER), record(1, long_b, N.MODE_DEFER)])
    assert verdict.runnable == []


def test_a_joined_rank_that_deferred_a_collective_brings_its_own_record():
    table = [record(0, "join", N.MODE_JOINED, deferred=["jd"], kind=N.K_JOIN), record(1, "jd", N.MODE_BLOCK)]
    verdict = N.agree(table)
    assert verdict.runnable == keys("jd") and verdict.in_one_exchange == []
