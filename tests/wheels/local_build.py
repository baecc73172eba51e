"""The default cells of release 2.0.0 built once per test session, for real, and indexed: the local torch
cell (its framework on this disk) and the CPU cells of TensorFlow and MXNet (their frameworks downloaded,
the registry's answer kept in the cache; see build/plan.py).

It uses the repository's build cache (.cache/aiacc-build, or AIACC_TEST_CACHE_DIR), the same one
`aiacc-build build` uses: after the first session (or after dev/main.sh) it is a no-op. Its dist/
is private to the session. Import the fixture into a conftest.py to use it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from wheels_testkit import LOCAL_TORCH_FILE

from aiacc_build.wheels.cache import DEFAULT_CACHE_DIR, BuildCache
from aiacc_build.wheels.driver import Builder, BuildReport, CellResult
from aiacc_build.registry import RegistryClient
from aiacc_build.wheels.plan import BuildPlan, CellStatus, plan_cells
from aiacc_build.index.mirror import IndexResult, build_index
from aiacc_build.matrix import Release, load_release

LOCAL_KEY = "2.0.0/torch-2.13.0/cpu/py3.11/x86_64"
TENSORFLOW_KEY = "2.0.0/tensorflow-2.21.0/cpu/py-any/x86_64"
MXNET_KEY = "2.0.0/mxnet-1.9.1/cpu/py-any/x86_64"
DEFAULT_KEYS = [LOCAL_KEY, TENSORFLOW_KEY, MXNET_KEY]


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

    def result(self, key: str) -> CellResult:
        found = [r for r in self.report.results if r.plan.cell.key == key]
        if not found:
            why = next((p.reason for p in self.plan.cells if p.cell.key == key), "not a cell of the release")
            pytest.fail(f"{key} was not built by the default build: {why}")
        return found[0]

    def path(self, key: str) -> str:
        """The cell's wheel under the mirror root as the build named it (its proven platform tag)."""
        return self.result(key).path.relative_to(self.root).as_posix()

    @property
    def torch_result(self) -> CellResult:
        return self.result(LOCAL_KEY)

    @property
    def torch_plan(self) -> BuildPlan:
        """The default plan with the torch cell alone to build (tests that rebuild it many times)."""
        cells = tuple(p if p.status is not CellStatus.BUILD or p.cell.key == LOCAL_KEY
                      else dataclasses.replace(p, status=CellStatus.DEFERRED, reason="not selected")
                      for p in self.plan.cells)
        return BuildPlan(self.plan.release, cells)


def shared_cache_dir() -> Path:
    return Path(os.environ.get("AIACC_TEST_CACHE_DIR", DEFAULT_CACHE_DIR))


def build_local(dist: Path, cache_dir: Path) -> LocalBuild:
    release = load_release("2.0.0")
    # online: the default build downloads the TensorFlow and MXNet frameworks (the answer is cached)
    plan = plan_cells("2.0.0", release.cells, RegistryClient(cache_dir / "registry"))
    report = Builder(BuildCache(cache_dir), dist).build(release.info, plan)
    assert not report.failures, "\n".join(f.error for f in report.failures)
    index = build_index("2.0.0", dist)
    return LocalBuild(release=release, plan=plan, report=report, index=index, dist=dist, cache_dir=cache_dir)


@pytest.fixture(scope="session")
def local_build(tmp_path_factory) -> LocalBuild:
    if not Path(LOCAL_TORCH_FILE).is_file():
        pytest.skip(f"{LOCAL_TORCH_FILE} is not on this disk")
    return build_local(tmp_path_factory.mktemp("local-dist"), shared_cache_dir())
