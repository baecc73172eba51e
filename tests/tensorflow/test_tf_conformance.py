"""Every row of the Horovod collective surface (tests/support/hvd_conformance.py) through
perseus.tensorflow.horovod on a 2-rank job, equal to numpy's answer: one test per row (its id is the row's key),
which docs/coverage.md names."""
import sys
from pathlib import Path

import pytest

from test_tf_horovod_runs import run_job

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
import hvd_conformance as C  # noqa: E402

WORKER = Path(__file__).resolve().parent / "workers" / "tf_rows.py"
ROWS = C.universe(C.BINDINGS["tensorflow"])


@pytest.fixture(scope="module")
def reports(ops):
    return C.verdicts_by_row(run_job("rows", worker=WORKER))


@pytest.mark.parametrize("row", ROWS, ids=[row.key() for row in ROWS])
def test_row(reports, row):
    C.assert_row_passed(reports, row)
