import subprocess
import sys

import pytest

from launch_helpers import BASE_ENV


@pytest.fixture(scope="session", autouse=True)
def perseus_installed() -> None:
    proc = subprocess.run([sys.executable, "-c", "import perseus.launch"], stderr=subprocess.PIPE,
                          universal_newlines=True, env=BASE_ENV)
    if proc.returncode != 0:
        pytest.fail("perseus-common is not installed in {} (bash dev/test.sh installs it): {}".format(sys.executable, proc.stderr))
