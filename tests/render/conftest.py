from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from aiacc_build.matrix import load_all
from aiacc_build.render import BuildHost, render_release_to

TOOL_BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    """A linter installed into the tool's environment by `pip install -e .[test]`."""
    path = TOOL_BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run `bash dev/test.sh` (it installs the test extras)")
    return found


@pytest.fixture(scope="session")
def real_releases():
    return load_all()


@pytest.fixture(scope="session")
def rendered(real_releases, tmp_path_factory) -> dict[str, Path]:
    """Every shipped release rendered once, as `aiacc-build render` does, for the linters."""
    out = tmp_path_factory.mktemp("dist")
    host = BuildHost.detect()
    return {r.info.version: render_release_to(r.info, r.cells, out / r.info.version, host).out_dir for r in real_releases}
