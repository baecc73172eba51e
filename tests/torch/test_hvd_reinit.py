"""hvd.init() after hvd.shutdown() works every time, under the torch launcher's rendezvous
(PERSEUS_USE_DDP_LAUNCHER=1) and perseus's own (=0), on 2 real processes."""

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "runtime"))
from perseus_harness import launch  # noqa: E402

CYCLES = 100


@pytest.mark.parametrize("ddp_launcher", ["1", "0"])
def test_init_after_shutdown_every_time(ddp_launcher):
    ranks = launch(str(HERE / "workers" / "hvd_reinit.py"), 2, [str(CYCLES)], timeout=300, check=False,
                   env={"PERSEUS_USE_DDP_LAUNCHER": ddp_launcher})
    for r in ranks:
        assert r.output is not None, r.stderr[-3000:]
        assert r.output["error"] is None, r.output["error"]
        assert r.output["done"] == CYCLES
