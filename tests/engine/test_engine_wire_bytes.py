"""fp16 on the wire, proven by counting bytes on a link: 2 ranks in two network namespaces (bench/netns.py)
allreduce 8 MiB of fp32 with PERSEUS_ALLREDUCE_DTYPE=1 and =0; eth0's tx_bytes of rank 0 per allreduce must
be the buffer's size (ring, 2 ranks) and half of it. Needs root (ip netns, tc): skipped without."""

import json
import subprocess
import sys

import pytest

from engine_helpers import REPO_ROOT, base_env

sys.path.insert(0, str(REPO_ROOT / "bench"))
from netns import missing_requirement  # noqa: E402

BENCH = REPO_ROOT / "bench" / "engine_allreduce_bench.py"
reason = missing_requirement()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(reason), reason=reason or "ok")]


def test_fp16_halves_the_bytes_on_the_link(engine_library):
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--sizes", "8", "--reps", "2", "--rate", "10gbit",
         "--variants", "engine_fp32,engine_fp16", "--json"],
        env=base_env(engine_library), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
        timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    fp32, fp16 = found["engine_fp32"]["8"]["sent"], found["engine_fp16"]["8"]["sent"]
    payload = 8 << 20
    assert payload <= fp32 < payload * 1.1  # the fp32 buffer once (reduce-scatter + allgather halves), + headers
    assert 0.45 < fp16 / fp32 < 0.55, (fp16, fp32)
