from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aiacc_build.conda_table import default_conda_table
from aiacc_build.matrix import load_all
from aiacc_build.render.release import render_releases_to
from aiacc_build.render.support import BuildHost


@pytest.fixture(scope="session")
def releases():
    return load_all()


@pytest.fixture(scope="session")
def table():
    return default_conda_table()


@pytest.fixture(scope="session")
def rendered_dist(releases, tmp_path_factory) -> Path:
    """Every shipped release rendered once, as `aiacc-build render` writes it (read-only for tests)."""
    out = tmp_path_factory.mktemp("dist")
    render_releases_to(releases, out, BuildHost.detect())
    return out


@pytest.fixture
def dist_copy(rendered_dist, tmp_path) -> Path:
    """A copy a test may break."""
    target = tmp_path / "dist"
    shutil.copytree(rendered_dist, target)
    return target


def release(releases, version: str):
    (found,) = [r for r in releases if r.info.version == version]
    return found
