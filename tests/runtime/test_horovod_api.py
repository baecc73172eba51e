"""perseus.torch.horovod against the Horovod API definitions, on 2 real processes over Gloo."""

import pytest

from perseus_harness import launch

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


@pytest.fixture(scope="module")
def ranks():
    results = launch("hvd_api.py", 2, timeout=180)
    return [r.output for r in results]


def value(ranks, name, rank=None):
    picked = ranks if rank is None else [ranks[rank]]
    for entry in picked:
        assert entry[name]["ok"], entry[name].get("trace") or entry[name].get("error")
    return [entry[name]["value"] for entry in ranks] if rank is None else ranks[rank][name]["value"]


def error(ranks, name):
    messages = []
    for entry in ranks:
        assert not entry[name]["ok"], "{} should have raised on every rank".format(name)
        messages.append(entry[name]["error"])
    return messages


def test_calls_before_init_raise(ranks):
    for entry in ranks:
        assert not entry["before_init"]["ok"] and "hvd.init()" in entry["before_init"]["error"]


def test_identity(ranks):
    for r, got in enumerate(value(ranks, "identity")):
        assert got["rank"] == r and got["size"] == 2
        assert got["local_rank"] == r and got["local_size"] == 2
        assert got["cross_rank"] == 0 and got["cross_size"] == 1
        assert got["is_initialized"] and got["gloo_built"] and got["gloo_enabled"] and not got["mpi_enabled"]


def test_allreduce_average_returns_new_tensor(ranks):
    for got in value(ranks, "allreduce_average"):
        assert got["out"] == [1.5, 3.0, 4.5]
    assert value(ranks, "allreduce_average")[1]["input_untouched"] == [2.0, 4.0, 6.0]


def test_allreduce_sum_and_average_false(ranks):
    assert all(v == [3.0] * 4 for v in value(ranks, "allreduce_sum"))
    assert all(v == [1.0] for v in value(ranks, "allreduce_average_flag_false"))


def test_allreduce_min_max_product(ranks):
    assert all(v == [[2.0], [3.0], [6.0]] for v in value(ranks, "allreduce_min_max_product"))


def test_allreduce_in_place(ranks):
    for got in value(ranks, "allreduce_inplace"):
        assert got == {"out": [1.0, 20.0], "returns_same_object": True}


def test_allreduce_integer(ranks):
    assert all(v == [3.0, 10.0] for v in value(ranks, "allreduce_int"))


def test_allreduce_fp16_compression_returns_input_dtype(ranks):
    for got in value(ranks, "allreduce_fp16_compression"):
        assert got["dtype"] == "torch.float32"
        assert got["out"] == pytest.approx([0.3, 3001.5, -9.75], rel=1e-3)


def test_prescale_postscale(ranks):
    assert all(v == [3.0] for v in value(ranks, "allreduce_prescale_postscale"))


def test_adasum_matches_the_pairwise_formula(ranks):
    # a=[1,0], b=[1,1]: a.b=1, |a|^2=1, |b|^2=2 -> (1-1/2)a + (1-1/4)b = [1.25, 0.75]
    for got in value(ranks, "allreduce_adasum"):
        assert got == pytest.approx([1.25, 0.75])


def test_shape_mismatch_is_a_clear_error_on_every_rank(ranks):
    for message in error(ranks, "allreduce_shape_mismatch"):
        assert "HorovodCollectiveError" in message and "'grad.weight'" in message
        assert "rank 0 [2, 3]" in message and "rank 1 [3, 3]" in message


def test_dtype_mismatch_is_a_clear_error(ranks):
    for message in error(ranks, "allreduce_dtype_mismatch"):
        assert "'mixed'" in message and "torch.float32" in message and "torch.float64" in message


def test_job_continues_after_a_reported_mismatch(ranks):
    assert all(v == [1.0] for v in value(ranks, "allreduce_after_mismatch_still_works"))


def test_async_forms(ranks):
    for got in value(ranks, "async_allreduce_poll_synchronize"):
        assert got["out1"] == [3.0] and got["b_in_place"] == [3.0] and got["poll_type"] == "bool"
        assert "already synchronized" in got["twice"]


def test_allgather_default_stacks_as_the_seed_says(ranks):
    for got in value(ranks, "allgather_stack_default"):
        assert got["out"] == [[0.0, 0.0], [1.0, 1.0]]


def test_allgather_stacking_needs_equal_shapes(ranks):
    for message in error(ranks, "allgather_stack_shape_mismatch"):
        assert "'gather.bad'" in message and "rank 0 [1]" in message and "rank 1 [2]" in message


def test_allgather_concatenates_with_change_hvd_allgather_1(ranks):
    for got in value(ranks, "allgather_concat"):
        assert got["same"] == [0.0, 0.0, 1.0, 1.0]
        assert got["ragged"] == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
        assert got["async"] == [0, 1]


def test_broadcast(ranks):
    for got in value(ranks, "broadcast"):
        assert got["out"] == [100.0, 101.0, 102.0, 103.0]
    assert value(ranks, "broadcast")[0]["input_untouched"] == [0.0, 1.0, 2.0, 3.0]


def test_broadcast_in_place_and_async(ranks):
    for got in value(ranks, "broadcast_inplace_and_async"):
        assert got == {"t": [0.0, 0.0, 0.0], "u": [8.0, 8.0], "v": [1.0]}


def test_broadcast_root_mismatch(ranks):
    for message in error(ranks, "broadcast_root_mismatch"):
        assert "root ranks" in message and "'bad.root'" in message


def test_broadcast_parameters(ranks):
    for got in value(ranks, "broadcast_parameters"):
        assert got["equal_root"] and got["named_params"] == [1.0] * 4


def test_broadcast_parameters_mismatch_names_the_tensor(ranks):
    for message in error(ranks, "broadcast_parameters_mismatch"):
        assert "bias [4] float32" in message or "weight [4, 3] float32" in message


def test_broadcast_optimizer_state(ranks):
    got = value(ranks, "broadcast_optimizer_state")
    assert got[0] == got[1] and got[1]["lr"] == pytest.approx(0.1)


def test_broadcast_and_allgather_object(ranks):
    assert all(v == {"rank": 1, "tensor": [1, 1]} for v in value(ranks, "broadcast_object"))
    assert all(v == [{"r": 0, "text": "x"}, {"r": 1, "text": "xx"}] for v in value(ranks, "allgather_object"))


def test_barrier(ranks):
    assert value(ranks, "barrier") == [True, True]


def test_sync_batch_norm_equals_batch_norm_over_the_whole_batch(ranks):
    for got in value(ranks, "sync_batch_norm"):
        assert max(got.values()) < 1e-10, got


def test_join_contributes_zeros_and_returns_the_last_rank(ranks):
    got = value(ranks, "join")
    # average divides by both ranks; a broadcast raises while a rank has joined (Horovod)
    assert got[0]["outs"] == [[2.0, 4.0], [1.0], "HorovodCollectiveError"]
    assert got[0]["last"] == got[1]["last"] == 0


def test_shutdown(ranks):
    assert all(not e["after_shutdown_is_initialized"]["value"] for e in ranks)
