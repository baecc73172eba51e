import sys
from pathlib import Path

# the session build of the local cell and its test kit (tests/wheels/)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wheels"))

import pytest  # noqa: E402
from local_build import local_build  # noqa: E402,F401

from aiacc_build.matrix import load_all  # noqa: E402


@pytest.fixture(scope="session")
def real_releases():
    return load_all()
