"""bench/ddp_bench.py end to end (opt-in: AIACC_OPTIN=1; needs root and iproute2, ~1 min): it runs every
variant over its two namespaces, prints the figures as JSON and removes its namespaces."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from perseus_harness import REPO_ROOT

pytestmark = pytest.mark.optin


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("tc") is None, reason="needs root and iproute2")
def test_ddp_bench_runs_all_variants_and_cleans_up():
    done = subprocess.run([sys.executable, str(REPO_ROOT / "bench" / "ddp_bench.py"), "--steps", "2", "--warmup", "1",
                           "--rounds", "1", "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(done.stdout[done.stdout.index("{"):])
    assert set(summary["median_step_s"]) == {"plain", "torch_fp16_hook", "perseus"}
    assert all(v > 0 for v in summary["median_step_s"].values())
    assert summary["fp16_allreduce_alone_s"] > 0
    for variant, phases in summary["median_phase_s"].items():
        assert set(phases) == {"forward", "backward", "optimizer"} and all(t > 0 for t in phases.values())
        assert summary["fp16_floor_s"][variant] >= summary["fp16_allreduce_alone_s"]
    assert len(summary["perseus_streams"]["perseus"]) == 1  # the streams it used (measuring: 3 steps here)
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "perseus-bench-" not in namespaces
