"""Every row of the Horovod collective surface (tests/support/hvd_conformance.py) through perseus.mxnet on a 2-rank
job, equal to numpy's answer: one test per row (its id is the row's key), which docs/coverage.md names."""
from pathlib import Path

import pytest

from support import hvd_conformance as C
from test_mxnet_jobs import run_job

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

WORKER = Path(__file__).resolve().parent / "workers" / "mxnet_rows.py"
ROWS = C.universe(C.BINDINGS["mxnet"])


@pytest.fixture(scope="module")
def reports(mxnet_python):
    return C.verdicts_by_row(run_job(mxnet_python, "rows", worker=WORKER))


@pytest.mark.parametrize("row", ROWS, ids=[row.key() for row in ROWS])
def test_row(reports, row):
    C.assert_row_passed(reports, row)
