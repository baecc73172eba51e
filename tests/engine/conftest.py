"""tests/engine: the native engine through its Python handle, in real multi-process jobs (no framework)."""

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILT = REPO_ROOT / "native" / "build" / "engine" / "libperseus_engine.so"


@pytest.fixture(scope="session")
def engine_library():
    """The engine library the ranks load: PERSEUS_ENGINE_LIBRARY, else the dev/test.sh build."""
    path = os.environ.get("PERSEUS_ENGINE_LIBRARY") or str(BUILT)
    if not os.path.isfile(path):
        pytest.fail("no engine library at {}: build it (bash dev/test.sh builds native/ with "
                    "-DPERSEUS_WITH_ENGINE=ON) or set PERSEUS_ENGINE_LIBRARY".format(path))
    return path
