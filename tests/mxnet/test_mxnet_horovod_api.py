"""perseus.mxnet's Horovod 0.28 calls in a 2-rank job, each result against numpy: reduction ops with Horovod's
scaling rules, reducescatter, alltoall, grouped calls, object collectives, deferred-initialised Gluon parameters.
Two results were silently wrong before: a float32 hvd.allreduce went through the fp16 gradient wire (Horovod sums
exactly), and a 0-d NDArray came back with shape (1,)."""

import pytest
import numpy as np

from test_mxnet_jobs import run_job

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_horovod_calls_give_numpys_results(mxnet_python):
    reports = run_job(mxnet_python, "horovod_api")
    size = len(reports)
    exact = [np.array([1.0001, 3.14159265, 1e-5 + r, 65519.0 + r], dtype=np.float32) for r in range(size)]
    t = [np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * r for r in range(size)]
    rows = [np.arange(4 * size * 2, dtype=np.float64).reshape(4 * size, 2) * (r + 1) for r in range(size)]
    for rank, got in enumerate(reports):
        want_sum = np.sum(np.stack(exact).astype(np.float64), axis=0).astype(np.float32)
        assert np.array_equal(np.array(got["sum_fp32"], dtype=np.float32), want_sum), got["sum_fp32"]
        assert got["scalar_shape"] == [] and got["scalar"] == sum(2.0 + r for r in range(size))
        assert got["min"] == np.min(t, axis=0).tolist() and got["max"] == np.max(t, axis=0).tolist()
        assert got["product"] == np.prod(t, axis=0).tolist()
        # Horovod scales integers per rank in float64 before the sum, then casts back (toward zero)
        assert got["prescaled_int"] == [size * int(v * 0.5) for v in (3, 7, -5)]
        assert got["average_int"] == [int(np.trunc(sum(3 + r for r in range(size)) / size)), -7]
        total = np.sum(rows, axis=0)
        assert got["reducescatter"] == total[4 * rank:4 * (rank + 1)].tolist()
        # source s sent this rank s + 1 rows of (this rank * 100 + s)
        assert got["alltoall"] == [rank * 100 + s for s in range(size) for _ in range(s + 1)]
        assert got["alltoall_splits"] == [s + 1 for s in range(size)]
        assert got["grouped"] == [[sum(r + 1 for r in range(size))] * 2, [10.0 * size] * 3]
        assert got["objects"] == [{"rank": r, "tag": "x" * r} for r in range(size)]
        assert got["object"] == {"from": size - 1}
        assert "is not a registered process set: call hvd.add_process_set" in got["process_set"], got["process_set"]
        assert got["capabilities"] == {"gloo": True, "mpi": False, "nccl": 0, "ccl": False}
    assert len({r["deferred_weight"] for r in reports}) == 1  # rank 0's initial weight on every rank


def test_process_sets_on_four_ranks(mxnet_python):
    """Sets {0,1}, {2,3}, {0,2}: each collective gives what numpy gives over the set's members; a set's collective
    completes while a rank of another set sleeps; a rank outside a set is refused by name."""
    reports = run_job(mxnet_python, "process_sets", np_=4)
    t = {r: np.arange(4, dtype=np.float64) + 10 * r for r in range(4)}
    for rank, got in enumerate(reports):
        members = [0, 1] if rank < 2 else [2, 3]
        assert (got["set_rank"], got["set_size"]) == (members.index(rank), 2)
        assert got["sum"] == sum(t[m] for m in members).tolist()
        assert got["max"] == np.max([t[m] for m in members], axis=0).tolist()
        assert got["gathered"] == [[m, m] for m in members]
        assert got["broadcast"] == [members[1]] * 3  # root_rank is a global rank (1 or 3)
        assert got["reducescatter"] == (np.ones((2, 2)) * sum(m + 1 for m in members)).tolist()
        assert got["objects"] == members
        if rank in (0, 2):
            assert got["even_average"] == [1.0]  # (0 + 2) / 2
        assert "is not in ProcessSet" in got["outsider"], got["outsider"]
    # rank 0 slept 5 s before its allreduce on {0,1}: {2,3} did not wait for it
    assert reports[2]["finished_at"] < reports[0]["finished_at"] - 3.0
    assert reports[3]["sum_seconds"] < 3.0 and reports[1]["sum_seconds"] > 3.0


def test_basics_and_the_kits_rules_through_perseus_mxnet(mxnet_python):
    """Horovod's basics over the kit (before and after init), Horovod's exception types, and the kit's naming: a
    process set counts its unnamed calls apart, so an unnamed job-wide call after unnamed calls on a set that not
    every rank belongs to still pairs up (before: rank 0 named it allreduce.noname.2, rank 1 allreduce.noname.0)."""
    reports = run_job(mxnet_python, "basics")
    for rank, got in enumerate(reports):
        assert got["before_init"] == "HorovodNotInitialized" and got["gloo_enabled_before"] is False
        assert got["gloo_enabled"] is True and got["numbers"] == [2, rank, 2, rank, 1, 0]
        assert got["after_sets"] == [3.0, 3.0] and got["after_sets_named"] == [3.0, 3.0]
        assert got["solo"] == ([1.0, 1.0] if rank == 0 else None)
        assert got["refused"] == {"adasum": "NotSupportedByPerseus", "both": "ValueError",
                                  "mpi_threads_supported": "ValueError", "start_timeline": "NotSupportedByPerseus",
                                  "root_outside": "ValueError"}
        assert got["average_warns"] == "DeprecationWarning"
        assert got["grouped_step"] == 1  # DistributedTrainer(num_groups=3): every gradient averaged
