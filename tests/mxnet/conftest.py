"""tests/mxnet: perseus.mxnet in real multi-process jobs, in the MXNet environment that
native/bindings/mxnet/dev_env.sh makes (.venv-mxnet: Python 3.9, mxnet 1.9.1, perseus_mxnet built from this checkout)."""

import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PYTHON = REPO_ROOT / ".venv-mxnet" / "bin" / "python"


@pytest.fixture(scope="session")
def mxnet_python() -> str:
    """The interpreter the ranks run: PERSEUS_TEST_MXNET_PYTHON, else .venv-mxnet's."""
    path = os.environ.get("PERSEUS_TEST_MXNET_PYTHON") or str(DEFAULT_PYTHON)
    if not os.path.isfile(path):
        pytest.fail("no MXNet test environment at {}: run `bash native/bindings/mxnet/dev_env.sh` (or set "
                    "PERSEUS_TEST_MXNET_PYTHON to a Python with mxnet and perseus_mxnet installed)".format(path))
    probe = subprocess.run([path, "-c", "import mxnet, perseus.mxnet._native as n; n.read_manifest()"],
                           env=dict(os.environ, PYTHONPATH=str(REPO_ROOT / "native" / "runtime")),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if probe.returncode != 0:
        pytest.fail("{} has no working mxnet + perseus_mxnet (run `bash native/bindings/mxnet/dev_env.sh`):\n{}".format(
            path, probe.stdout[-2000:]))
    return path
