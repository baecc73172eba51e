"""A Horovod job's settings reach the native engine: HOROVOD_* variables read as their PERSEUS_* counterparts
(perseus/horovod_variables.py) change what the engine does, under perseusrun."""

import pytest

from engine_helpers import perseusrun, reports
from test_engine_runs import two_local_hosts

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_fusion_off_and_stream_count_from_horovod_variables(engine_library):
    # many small tensors in one cycle: fused by default (test_pipelined_slices_of_odd_sizes), never with fusion off
    proc = perseusrun(engine_library, 2, "pipeline", env={"HOROVOD_FUSION_THRESHOLD": "0", "HOROVOD_NUM_NCCL_STREAMS": "2"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == 2
    for r in found:
        assert r["info"]["fused_groups"] == 0
        assert r["info"]["streams"] == 2
        assert all(periodic for _, periodic in r["results"].values())


def test_hierarchical_allreduce_from_horovod_variable(engine_library):
    # fp16 wire (DTYPE 0) on 2 nodes x 2 ranks: one level unless asked for two
    proc = perseusrun(engine_library, 4, "pipeline", hosts=two_local_hosts(),
                      env={"HOROVOD_HIERARCHICAL_ALLREDUCE": "1", "PERSEUS_ALLREDUCE_DTYPE": "0"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert [r["info"]["hierarchical"] for r in found] == [1, 1, 1, 1]
