"""`import perseus` + torch DistributedDataParallel, on real Gloo processes with a recording backend.

The recording backend (workers/recording_backend.py) wraps ProcessGroupGloo and logs the dtype and
byte count of every tensor handed to it, for plain DDP and for perseus's own groups alike, so the
wire format is observed, not inferred from a flag.
"""

import pytest
import torch

from perseus_harness import launch


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
    # perseus: only fp16 allreduces, exactly 2 bytes per gradient element per step, one per fusion group
    wire = {}
    for label, ops in first["records"].items():
        if label != "control":
            for key, (count, nbytes) in ops.items():
                wire[key] = [a + b for a, b in zip(wire.get(key, [0, 0]), [count, nbytes])]
    assert set(wire) == {"allreduce float16"}
    assert wire["allreduce float16"] == [steps * first["groups"], steps * numel * 2]
    # beside them, the control group carries the stream tuner's one agreement: 2 float64 spans
    assert first["records"].get("control", {}) == {"allreduce float64": [1, 16]}
    assert "allreduce float32" not in first["default_group_during_perseus"]["default"]


@pytest.mark.parametrize("model", ["mlp", "channels_last"])
def test_partitioned_gradients_still_match_plain_ddp_with_one_collective_per_group(model):
    """Automatic fusion cuts gradients above PARTITION_BYTES (here 4 KiB: fc1 8 KiB, fc2 16 KiB) into slices;
    channels_last convolutions' gradients are non-contiguous: reduced in a contiguous copy, copied back."""
    ranks = run("parity", 2, env={"CASE_PARTITION_BYTES": "4096", "CASE_MODEL": model})
    first = ranks[0]
    if model == "mlp":
        assert first["parts"] == first["entries"] + 1 + 3  # fc1.weight in 2 slices, fc2.weight in 4
    else:
        assert first["parts"] == first["entries"] + 4 + 4  # conv2.weight 18 KiB in 5 slices, head.weight 20 KiB in 5
    plain, accelerated = torch.tensor(first["plain"]), torch.tensor(first["perseus"])
    assert 0 < float((plain - accelerated).abs().max()) < 1e-3
    assert ranks[1]["perseus"] == first["perseus"]
    steps, numel = len(first["losses"]), first["numel"]
    wire = {}
    for label, ops in first["records"].items():
        if label != "control":
            for key, (count, nbytes) in ops.items():
                wire[key] = [a + b for a, b in zip(wire.get(key, [0, 0]), [count, nbytes])]
    assert wire == {"allreduce float16": [steps * first["groups"], steps * numel * 2]}


@pytest.fixture(scope="module")
def two_nodes():
    """4 ranks as 2 nodes x 2 (LOCAL_WORLD_SIZE=2, GROUP_RANK), PERSEUS_ALLREDUCE_DTYPE=2, then MODE=1 cases."""
    return run("dtype2", 4, env={"PERSEUS_ALLREDUCE_DTYPE": "2"}, local_size=2)


def test_dtype_2_sends_fp32_inside_nodes_and_fp16_between_nodes(two_nodes):
    ranks = two_nodes
    steps, numel = len(ranks[0]["losses"]), ranks[0]["numel"]
    for r, rank in enumerate(ranks):
        assert rank["topology"] == [0, 0, 1, 1]  # from LOCAL_WORLD_SIZE=2 / GROUP_RANK
        assert rank["policy"] == "two levels: fp32 inside nodes, fp16 between nodes"
        node = "stream0/node{}".format(r // 2)
        assert rank["records"][node] == {"reduce float32": [steps, steps * numel * 4],
                                         "broadcast float32": [steps, steps * numel * 4]}
        if r % 2 == 0:  # node leader
            assert rank["records"]["stream0/leaders"] == {"allreduce float16": [steps, steps * numel * 2]}
        else:
            assert "stream0/leaders" not in rank["records"]
        assert rank["records"]["stream0/all"] == {}  # nothing crosses one-level
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
            node = "stream0/node{}".format(r // 2)
            assert mode["records"][node] == {"reduce " + name: [steps, steps * numel * size],
                                             "broadcast " + name: [steps, steps * numel * size]}
            if r % 2 == 0:
                assert mode["records"]["stream0/leaders"] == {"allreduce " + name: [steps, steps * numel * size]}
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


@pytest.mark.parametrize("name,groups", [("fusion3", None), ("fusion0", 6), ("fusion_auto", 1)])
def test_collectives_per_step_equal_the_fusion_plan(suite, name, groups):
    for rank in case(suite, name):
        assert rank["groups"] == rank["plan"]  # perseus runs the native plan as it is
        if groups is not None:
            assert len(rank["plan"]) == groups
        per_stream = rank["allreduces_per_stream"]
        assert sum(per_stream.values()) == rank["steps"] * len(rank["plan"])
        used = {label: n for label, n in per_stream.items() if n}
        assert used == round_robin(len(rank["plan"]), rank["streams_per_step"][-rank["steps"]:])
        assert rank["fp16_only"]
    if name == "fusion3":
        assert 1 < len(case(suite, name)[0]["plan"]) <= 3


def round_robin(groups, streams_per_step):
    """Allreduces per stream when each step spreads its groups round-robin over its streams in use."""
    counts = {}
    for streams in streams_per_step:
        for g in range(groups):
            label = "stream{}/all".format(g % streams)
            counts[label] = counts.get(label, 0) + 1
    return counts


def test_unset_streams_are_measured_one_then_all_and_every_rank_keeps_the_same(suite):
    ranks = case(suite, "tuning")
    first = ranks[0]
    assert first["limit"] == 4 and first["groups"] == 6
    # 1 warm-up + 3 measured steps on one stream, the same on all four, then the choice
    assert first["streams_per_step"][:8] == [1] * 4 + [4] * 4
    assert first["decided"] and first["active"] in (1, 4)
    assert first["streams_per_step"][8:] == [first["active"]] * 2
    for rank in ranks:
        assert (rank["active"], rank["medians"], rank["streams_per_step"]) == \
            (first["active"], first["medians"], first["streams_per_step"])  # agreed, not each rank's own
        used = {label: n for label, n in rank["allreduces_per_stream"].items() if n}
        assert used == round_robin(rank["groups"], rank["streams_per_step"])
    assert "stream(s) (median reduction span per step with 1:" in first["description"]


def test_streams_set_by_the_user_are_used_from_the_first_step(suite):
    for rank in case(suite, "streams_set"):  # PERSEUS_ALLREDUCE_STREAMS=4: all four from the start, no measuring
        assert rank["decided"] and rank["active"] == 4 and rank["streams_per_step"] == [4] * 10
        assert rank["medians"] == {}
        used = {label: n for label, n in rank["allreduces_per_stream"].items() if n}
        assert used == round_robin(rank["groups"], [4] * 10)


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
        assert rank["allreduces"] == rank["groups"] * rank["steps"] // 2
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
        for variable, reason in [("PERSEUS_OFFLINE_NEG", "one fusion plan per model"),
                                 ("PERSEUS_NCCL_ENABLE", "special perseus build"),
                                 ("PERSEUS_NCCL_NETWORK_INTERFACE", "no NCCL communicator"),
                                 ("PERSEUS_GRADIENT_MOMENTUM", "PERSEUS_DOWNSAMPLE_N_ELEMENTS=1"),
                                 ("PERSEUS_ALLREDUCE_GRADIENT_SCALE", "PERSEUS_ALLREDUCE_DTYPE=1")]:
            found = [m for m in messages if m.startswith(variable + " is set but not honoured")]
            assert len(found) == 1, (variable, messages)
            assert reason in found[0]
