"""Every row of the Horovod collective surface (tests/support/hvd_conformance.py) through perseus.torch.horovod on
a 2-rank job, in both allgather modes, equal to numpy's answer: one test per row (its id is the row's key), which
docs/coverage.md names."""

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

torch = pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
SUPPORT = HERE.parents[0] / "support"
sys.path.insert(0, str(SUPPORT))
import hvd_conformance as C  # noqa: E402
from perseus_harness import launch, python_path  # noqa: E402

ROWS = C.universe(C.BINDINGS["torch"])


@pytest.fixture(scope="module")
def reports():
    outputs = []
    for mode in ("1", "0"):  # concatenating and stacking allgather
        outputs += [r.output for r in launch(str(HERE / "workers" / "hvd_rows.py"), 2, timeout=300,
                                             env={"PERSEUS_CHANGE_HVD_ALLGATHER": mode,
                                                  "PYTHONPATH": python_path() + ":" + str(SUPPORT)})]
    return C.verdicts_by_row(outputs)


@pytest.mark.parametrize("row", ROWS, ids=[row.key() for row in ROWS])
def test_row(reports, row):
    C.assert_row_passed(reports, row)
