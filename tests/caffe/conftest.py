"""tests/caffe: the Caffe patches on the checked source, libperseus-caffe and its solver-callback driver in
real 2-rank jobs; the full Caffe build and `caffe train` jobs are opt-in (AIACC_OPTIN=1, test_caffe_train_optin)."""

import subprocess
from pathlib import Path

import pytest

from caffe_helpers import BUILD, RECIPE


@pytest.fixture(scope="session")
def caffe_source() -> Path:
    """The checked, unpatched Caffe tree (recipes/caffe/build.sh source: fetched once, cached in .cache/caffe)."""
    proc = subprocess.run(["bash", str(RECIPE), "source"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail("recipes/caffe/build.sh source failed:\n" + proc.stderr[-2000:])
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def library_build() -> Path:
    """native/build-caffe: libperseus-caffe, its MPI plugins and the driver (dev/lib.sh caffe_library builds it)."""
    lib = BUILD / "lib" / "libperseus-caffe.so"
    driver = BUILD / "bin" / "perseus_caffe_driver"
    if not lib.is_file() or not driver.is_file():
        pytest.fail("no {} or {}: build native/bindings/caffe (source dev/lib.sh && caffe_library)".format(lib, driver))
    return BUILD
