"""The kit is framework-neutral: a binding that only converts tensors (tests/support/numpy_binding: numpy arrays,
the identity conversion) runs every conformance row (tests/support/hvd_conformance.py) on a 2-rank perseusrun job,
equal to numpy's answer, and a process set, with nothing of its own but the conversion. One test per row (its id
is the row's key), which docs/coverage.md names."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import hvd_conformance as C
from support.ports import free_ports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "workers" / "numpy_rows.py"
ENGINE = REPO / "native" / "build" / "engine" / "libperseus_engine.so"
ROWS = C.universe(C.BINDINGS["numpy"])


@pytest.fixture(scope="module")
def reports():
    library = os.environ.get("PERSEUS_ENGINE_LIBRARY") or str(ENGINE)
    if not os.path.isfile(library):
        pytest.fail("no engine library at {}: bash dev/test.sh builds it (native-core)".format(library))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERSEUS_", "MASTER_", "RANK", "WORLD_SIZE"))}
    master, store = free_ports(2)
    env.update({"PERSEUS_ENGINE_LIBRARY": library, "MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(store),
                "PYTHONPATH": os.pathsep.join([str(REPO / "native" / "runtime"), str(REPO / "tests" / "support")]),
                "GLOO_TIMEOUT_SECONDS": "60"})
    perseusrun = str(Path(sys.executable).with_name("perseusrun"))
    proc = subprocess.run([perseusrun, "-np", "2", "--", sys.executable, str(WORKER)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = [json.loads(line.split("REPORT ", 1)[1]) for line in proc.stdout.splitlines() if "REPORT " in line]
    assert sorted(r["rank"] for r in found) == [0, 1], proc.stdout[-3000:]
    return {r["rank"]: r for r in found}


@pytest.fixture(scope="module")
def verdicts(reports):
    return C.verdicts_by_row(reports.values())


@pytest.mark.parametrize("row", ROWS, ids=[row.key() for row in ROWS])
def test_row(verdicts, row):
    C.assert_row_passed(verdicts, row)


def test_a_process_set_through_the_kit(reports):
    assert reports[1]["set_of_rank_1"] == [1.0, 2.0, 3.0] and reports[0]["set_of_rank_1"] is None
