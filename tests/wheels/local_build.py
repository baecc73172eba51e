"""The local cell of release 2.0.0 built once per test session, for real, and indexed.

It uses the repository's build cache (.cache/aiacc-build, or AIACC_TEST_CACHE_DIR), the same one
`aiacc-build build` uses: after the first session (or after dev/main.sh) it is a no-op. Its dist/
is private to the session. Import the fixture into a conftest.py to use it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from wheels_testkit import LOCAL_TORCH_FILE

from aiacc_build.wheels.cache import DEFAULT_CACHE_DIR, BuildCache
from aiacc_build.wheels.driver import Builder, BuildReport
from aiacc_build.registry import RegistryClient
from aiacc_build.wheels.plan import BuildPlan, plan_cells
from aiacc_build.index.mirror import IndexResult, build_index
from aiacc_build.matrix import Release, load_release

LOCAL_KEY = "2.0.0/torch-2.13.0/cpu/py3.11/x86_64"


@dataclass(frozen=True)
class LocalBuild:
    release: Release
    plan: BuildPlan
    report: BuildReport
    index: IndexResult
    dist: Path
    cache_dir: Path

    @property
    def root(self) -> Path:
        return self.dist / self.release.info.version


def shared_cache_dir() -> Path:
    return Path(os.environ.get("AIACC_TEST_CACHE_DIR", DEFAULT_CACHE_DIR))


def build_local(dist: Path, cache_dir: Path) -> LocalBuild:
    release = load_release("2.0.0")
    plan = plan_cells("2.0.0", release.cells, RegistryClient(cache_dir / "registry", offline=True))
    report = Builder(BuildCache(cache_dir), dist).build(release.info, plan)
    assert not report.failures, "\n".join(f.error for f in report.failures)
    index = build_index("2.0.0", dist)
    return LocalBuild(release=release, plan=plan, report=report, index=index, dist=dist, cache_dir=cache_dir)


@pytest.fixture(scope="session")
def local_build(tmp_path_factory) -> LocalBuild:
    if not Path(LOCAL_TORCH_FILE).is_file():
        pytest.skip(f"{LOCAL_TORCH_FILE} is not on this disk")
    return build_local(tmp_path_factory.mktemp("local-dist"), shared_cache_dir())
