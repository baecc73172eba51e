"""`import perseus` + torch DistributedDataParallel, on real Gloo processes.

Plain DDP runs on a recording backend (workers/recording_backend.py: ProcessGroupGloo logging the dtype
and bytes of every tensor handed to it); perseus runs on its native engine, whose own counters give the
payload bytes per wire level and dtype (perseus_engine_wire_bytes), so the wire format is observed, not
inferred from a flag.
"""

import pytest
import torch

from perseus_harness import launch

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def run(job, nprocs=2, env=None, local_size=None, timeout=240):
    return [r.output for r in launch("ddp_cases.py", nprocs, [job], env=env, local_size=local_size, timeout=timeout)]


@pytest.mark.parametrize("nprocs", [2, 4])
def test_perseus_ddp_matches_plain_ddp_within_fp16_tolerance_and_sends_fp16(nprocs):
    ranks = run("parity", nprocs)
    first = ranks[0]
    plain, accelerated = torch.tensor(first["plain"]), torch.tensor(first["perseus"])
    difference = float((plain - accelerated).abs().max())
    assert 0 < difference < 1e-3, difference  # fp16 on the wire: close, yet not bit-identical
    for other in ranks[1:]:
        assert other["perseus"] == first["perseus"]  # every replica holds the same parameters
    assert first["hook_registered"] and first["policy"] == "one level: fp16"
    steps, numel = len(first["losses"]), first["numel"]
    # plain DDP: fp32 gradients through the default group
    assert first["plain_records"]["default"]["allreduce float32"] == [steps, steps * numel * 4]
    # perseus: only fp16 on the engine's one level, exactly 2 bytes per gradient element per step, one collective
    # per DDP bucket (or fewer, fused) per step
    assert first["records"]["node"] == {} and first["records"]["leaders"] == {}
    assert set(first["records"]["all"]) == {"float16"}
    calls, nbytes = first["records"]["all"]["float16"]
    assert nbytes == steps * numel * 2 and steps <= calls <= steps * first["buckets"]
    assert "allreduce float32" not in first["default_group_during_perseus"]["default"]


def test_channels_last_gradients_still_match_plain_ddp():
    """channels_last convolutions: DDP hands perseus their gradients as non-contiguous bucket views; the engine
    reduces the (contiguous) bucket in place. (The engine cuts tensors above 2 MiB into slices itself: its
    plan tests cover that; this test no longer shrinks the slice size of the removed Python engine.)"""
    ranks = run("parity", 2, env={"CASE_MODEL": "channels_last"})
    first = ranks[0]
    plain, accelerated = torch.tensor(first["plain"]), torch.tensor(first["perseus"])
    assert 0 < float((plain - accelerated).abs().max()) < 1e-3
    assert ranks[1]["perseus"] == first["perseus"]
    steps, numel = len(first["losses"]), first["numel"]
    assert set(first["records"]["all"]) == {"float16"}
    assert first["records"]["all"]["float16"][1] == steps * numel * 2


@pytest.fixture(scope="module")
def two_nodes():
    """4 ranks as 2 nodes x 2 (LOCAL_WORLD_SIZE=2, GROUP_RANK), PERSEUS_ALLREDUCE_DTYPE=2, then MODE=1 cases."""
    return run("dtype2", 4, env={"PERSEUS_ALLREDUCE_DTYPE": "2"}, local_size=2)


def test_dtype_2_sends_fp32_inside_nodes_and_fp16_between_nodes(two_nodes):
    ranks = two_nodes
    steps, numel = len(ranks[0]["losses"]), ranks[0]["numel"]
    for r, rank in enumerate(ranks):
        assert rank["topology"]["node"] == r // 2 and rank["topology"]["num_nodes"] == 2  # LOCAL_WORLD_SIZE / GROUP_RANK
        assert rank["policy"] == "two levels: fp32 inside nodes, fp16 between nodes"
        # inside the node, per step and fused group: the fp32 reduce-scatter, then the allgather of the parts
        # as they came back from between the nodes, fp16
        node = rank["records"]["node"]
        assert set(node) == {"float32", "float16"}
        assert node["float32"][1] == steps * numel * 4 and node["float16"][1] == steps * numel * 2
        assert node["float32"][0] == node["float16"][0]
        # between the nodes (equal nodes: Horovod's hierarchical allreduce): each local rank carries its part,
        # about half of every fused group, in one fp16 allreduce per group
        between = rank["records"]["leaders"]
        assert set(between) == {"float16"} and between["float16"][0] == node["float32"][0]
    for node_ranks in (ranks[0:2], ranks[2:4]):
        parts = [rank["records"]["leaders"]["float16"] for rank in node_ranks]
        assert parts[0][1] + parts[1][1] == steps * numel * 2  # the node's parts make the whole gradient
        assert abs(parts[0][1] - parts[1][1]) <= 2 * parts[0][0]  # at most one element apart per group
    for r, rank in enumerate(ranks):
        assert rank["records"]["all"] == {}  # nothing crosses one-level
        assert rank["params"] == ranks[0]["params"]
        assert float((torch.tensor(rank["plain"]) - torch.tensor(rank["params"])).abs().max()) < 1e-3


def test_mode_1_runs_two_levels_with_one_dtype(two_nodes):
    ranks = two_nodes
    steps, numel = 5, ranks[0]["numel"]
    for r, rank in enumerate(ranks):
        for dtype, (name, size) in (("0", ("float16", 2)), ("1", ("float32", 4))):
            mode = rank["modes"][dtype]
            assert mode["policy"] == "two levels: {0} inside nodes, {0} between nodes".format(
                "fp16" if dtype == "0" else "fp32")
            node = mode["records"]["node"]
            assert set(node) == {name} and node[name][1] == 2 * steps * numel * size
            between = mode["records"]["leaders"]
            assert set(between) == {name} and between[name][0] == node[name][0] // 2
            half_of_the_gradient = steps * numel * size / 2
            assert abs(between[name][1] - half_of_the_gradient) <= size * between[name][0]
            difference = float((torch.tensor(rank["plain5"]) - torch.tensor(mode["params"])).abs().max())
            assert difference < (1e-3 if dtype == "0" else 1e-5), (dtype, difference)


@pytest.fixture(scope="module")
def suite():
    ranks = run("suite")
    return ranks


def case(suite, name):
    values = []
    for rank in suite:
        entry = rank[name]
        assert entry["ok"], entry.get("error")
        values.append(entry["value"])
    return values


def test_import_perseus_before_torch_patches_ddp(suite):
    assert all(rank["import_first"]["wrapped"] for rank in suite)


def test_fusion_0_sends_each_bucket_alone_and_automatic_fusion_never_sends_more(suite):
    """The engine's fusion (PERSEUS_ALLREDUCE_FUSION) acts on the collectives agreed in one negotiation cycle:
    with 0 every DDP bucket is its own collective; automatic fusion joins those agreed together (how many
    depends on timing, so only the bounds are checked). (DDP's first pass runs with one bucket, it rebuilds its
    buckets after it: the submissions are counted, not buckets x steps.) The per-model fusion plan of the removed Python
    engine is gone: the engine plans per cycle."""
    for name in ("fusion0", "fusion_auto"):
        for rank in case(suite, name):
            assert rank["buckets"] > 1
            assert set(rank["records"]["all"]) == {"float16"}
            calls, nbytes = rank["records"]["all"]["float16"]
            assert nbytes == rank["steps"] * rank["numel"] * 2
            assert rank["submissions"] > rank["steps"]
            if name == "fusion0":
                assert calls == rank["submissions"]
            else:
                assert rank["steps"] <= calls <= rank["submissions"]


def test_streams_set_by_the_user_are_the_engines(suite):
    """PERSEUS_ALLREDUCE_STREAMS=4: four engine streams. (The stream tuner that chooses the count when the
    variable is unset is the engine's; its tests are the engine's.)"""
    for rank in case(suite, "streams_set"):
        assert rank["streams"] == 4
        assert rank["records"]["all"]["float16"][1] == 4 * rank["numel"] * 2


def test_nancheck_raises_on_every_rank_naming_the_parameter(suite):
    for rank in case(suite, "nancheck"):
        assert rank["raised"], rank
        assert "PERSEUS_ALLREDUCE_NANCHECK" in rank["message"] and "fc2.weight" in rank["message"]
        assert "fc1.weight" not in rank["message"] and "head.weight" not in rank["message"]
    assert all(not r["raised"] for r in case(suite, "nancheck_off"))


def test_gradient_scale_decides_fp16_overflow(suite):
    for rank in case(suite, "overflow10"):
        assert rank["raised"] and "weight" in rank["message"]
        assert "PERSEUS_ALLREDUCE_GRADIENT_SCALE (now 10)" in rank["message"]
    for rank in case(suite, "overflow5"):
        assert not rank["raised"]
        assert rank["grad"][0] == pytest.approx([5000.0] * 4, rel=1e-3)


def test_accumulate_n_steps_communicates_every_nth_step_and_matches_no_sync_accumulation(suite):
    for rank in case(suite, "accumulate"):
        assert rank["records"]["all"]["float16"][1] == rank["numel"] * 2 * rank["steps"] // 2  # every 2nd pass
        difference = float((torch.tensor(rank["reference"]) - torch.tensor(rank["perseus"])).abs().max())
        assert difference < 1e-3, difference


def test_downsample_sends_one_element_in_n_and_loses_nothing_with_momentum_1(suite):
    for rank in case(suite, "downsample"):
        assert rank["bytes"] == rank["numel"] * 2 * rank["steps"] // rank["n"]  # fp16, 1/n of the elements
        assert rank["delta"] == pytest.approx(rank["expected_delta"], abs=2e-4)


def test_users_own_hook_replaces_perseus_with_a_warning(suite):
    for rank in case(suite, "displace"):
        assert not rank["registered"]
        assert any("replaces the perseus communication hook" in w for w in rank["warnings"])
        assert "allreduce float16" in rank["default"]["d"]  # torch's fp16 hook, on the default group


def test_perf_check_reports_the_slow_rank_on_its_own_machine(suite):
    fast, slow = case(suite, "perf")
    assert fast["reports"] == []
    assert slow["reports"] and "rank 1" in slow["reports"][0]


def test_variables_this_build_cannot_honour_warn_once_saying_why(suite):
    for messages in case(suite, "unhonoured"):
        # PERSEUS_OFFLINE_NEG is set in this case too: the engine honours it, so no warning
        assert not any(m.startswith("PERSEUS_OFFLINE_NEG") for m in messages), messages
        for variable, reason in [("PERSEUS_NCCL_ENABLE", "special perseus build"),
                                 ("PERSEUS_NCCL_NETWORK_INTERFACE", "no NCCL communicator"),
                                 ("PERSEUS_GRADIENT_MOMENTUM", "PERSEUS_DOWNSAMPLE_N_ELEMENTS=1"),
                                 ("PERSEUS_ALLREDUCE_GRADIENT_SCALE", "PERSEUS_ALLREDUCE_DTYPE=1")]:
            found = [m for m in messages if m.startswith(variable + " is set but not honoured")]
            assert len(found) == 1, (variable, messages)
            assert reason in found[0]
