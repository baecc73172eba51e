"""Fixtures of the perseus_tensorflow tests: TensorFlow and the binding are installed into .venv by the
dev/test.sh stage tensorflow-binding (tensorflow-cpu 2.21.0 + pip install ./native/bindings/tensorflow)."""
import importlib
import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@pytest.fixture(scope="session")
def tf():
    return pytest.importorskip("tensorflow", reason="TensorFlow is installed by the dev/test.sh stage tensorflow-binding")


@pytest.fixture(scope="session")
def ops(tf):
    try:
        native = importlib.import_module("perseus.tensorflow._native")
    except ImportError as error:
        pytest.fail("perseus_tensorflow is not installed (%s): run `bash dev/test.sh` (stage tensorflow-binding) "
                    "or `pip install --no-build-isolation ./native/bindings/tensorflow`" % error)
    return native.load()
