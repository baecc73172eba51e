"""Fixtures of the native-core / perseus_torch tests (the binding is installed by dev/test.sh)."""
import importlib

import pytest


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch", reason="torch is installed by the dev/test.sh stage torch-binding")


@pytest.fixture(scope="session")
def ops(torch):
    try:
        native = importlib.import_module("perseus.torch._native")
    except ImportError as error:
        pytest.fail(
            "perseus_torch is not installed (%s): run `bash dev/test.sh` (stage torch-binding) or "
            "`pip install --no-build-isolation ./native/bindings/torch`" % error
        )
    return native.load()


@pytest.fixture
def each_dispatch(ops):
    """Runs a test once per CPU dispatch path this machine has, restoring 'auto' afterwards."""
    paths = ops.dispatch_paths().split()
    yield paths
    ops.set_dispatch("auto")
