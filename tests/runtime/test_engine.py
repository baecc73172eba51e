"""The engine's pure decisions: the wire policy table and the fusion groups (native planner)."""

import pytest
import torch

from perseus import config
from perseus.torch import _engine, _kernels


@pytest.mark.parametrize("env,force_fp16,nodes,local,expected", [
    ({}, False, 2, 4, "one level: fp16"),
    ({}, False, 1, 4, "one level: fp16"),
    ({"PERSEUS_ALLREDUCE_DTYPE": "1"}, False, 2, 4, "one level: fp32"),
    ({"PERSEUS_ALLREDUCE_DTYPE": "1"}, True, 2, 4, "one level: fp16"),
    ({"PERSEUS_ALLREDUCE_DTYPE": "2"}, False, 2, 4, "two levels: fp32 inside nodes, fp16 between nodes"),
    ({"PERSEUS_ALLREDUCE_DTYPE": "2"}, True, 2, 4, "two levels: fp16 inside nodes, fp16 between nodes"),
    ({"PERSEUS_ALLREDUCE_DTYPE": "2"}, False, 1, 4, "one level: fp32"),   # all inside one node
    ({"PERSEUS_ALLREDUCE_DTYPE": "2"}, False, 4, 1, "one level: fp16"),   # all between nodes
    ({"PERSEUS_ALLREDUCE_MODE": "1"}, False, 2, 4, "two levels: fp16 inside nodes, fp16 between nodes"),
    ({"PERSEUS_ALLREDUCE_MODE": "1", "PERSEUS_ALLREDUCE_DTYPE": "1"}, False, 2, 4,
     "two levels: fp32 inside nodes, fp32 between nodes"),
])
def test_wire_policy(env, force_fp16, nodes, local, expected):
    policy = _engine.wire_policy(config.load(env), nodes, local, force_fp16=force_fp16)
    assert policy.describe() == expected


def test_gradient_scale_is_carried():
    assert _engine.wire_policy(config.load({"PERSEUS_ALLREDUCE_GRADIENT_SCALE": "2.5"}), 1, 2).scale == 2.5


def test_fusion_groups_follow_the_native_plan_per_dtype_in_gradient_order():
    entries = [_engine.Entry("a", 1000, torch.float32, torch.device("cpu")),
               _engine.Entry("b", 10, torch.float64, torch.device("cpu")),
               _engine.Entry("c", 1000, torch.float32, torch.device("cpu")),
               _engine.Entry("d", 2000, torch.float32, torch.device("cpu"))]
    groups = _engine.plan_groups(entries, 2, streams=4)
    fp32_plan = _kernels.plan_buckets([4000, 4000, 8000], 2)
    assert [g.members for g in groups if g.dtype == torch.float32] == [[[0, 2, 3][i] for i in b] for b in fp32_plan]
    assert [g.members for g in groups if g.dtype == torch.float64] == [[1]]
    assert [g.members[0] for g in groups] == sorted(g.members[0] for g in groups)  # launch order
    assert [g.stream for g in groups] == [i % 4 for i in range(len(groups))]
    assert all(g.offsets[0] == 0 for g in groups)


def test_automatic_fusion_makes_groups_of_a_few_mib():
    sizes = [3 << 20] * 8  # 24 MiB: the native automatic plan makes one group
    assert len(_kernels.plan_buckets(sizes, None)) == 1
    assert _engine.native_plan(sizes, None, 4) == _kernels.plan_buckets(sizes, 24 // 4)
    assert len(_engine.native_plan(sizes, None, 4)) == 4  # two 3 MiB gradients reach the 4 MiB target
    assert _engine.native_plan([1000, 2000], None, 4) == _kernels.plan_buckets([1000, 2000], None)  # small: one
    assert _engine.native_plan(sizes, 2, 4) == _kernels.plan_buckets(sizes, 2)  # an explicit value is kept


def test_automatic_fusion_cuts_large_gradients_into_near_equal_slices():
    cpu = torch.device("cpu")
    big = _engine.Entry("big", (10 << 20) // 4 + 3, torch.float32, cpu)  # 10 MiB + 12 bytes: 3 slices
    small = _engine.Entry("small", 100, torch.float32, cpu)
    parts = _engine.partition([small, big], None)
    assert [(p.entry, p.offset) for p in parts][:2] == [(0, 0), (1, 0)] and len(parts) == 4
    slices = [p for p in parts if p.entry == 1]
    assert sum(p.numel for p in slices) == big.numel
    assert [p.offset for p in slices] == [0, slices[0].numel, slices[0].numel + slices[1].numel]
    assert max(p.numel for p in slices) - min(p.numel for p in slices) <= 1
    assert all(p.nbytes <= _engine.PARTITION_BYTES for p in slices)
    # an explicit PERSEUS_ALLREDUCE_FUSION plans whole gradients
    assert [(p.entry, p.numel) for p in _engine.partition([small, big], 0)] == [(0, 100), (1, big.numel)]
