import pytest


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch", reason="torch is installed by the dev/test.sh stage torch-binding")
