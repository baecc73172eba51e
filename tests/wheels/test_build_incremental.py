"""The content-addressed cache, for real on a copy of native/: an identical copy rebuilds nothing, a
touched binding source rebuilds only the binding's wheels, a touched core source rebuilds the core
once, a touched runtime source rebuilds only perseus-common (and re-tests the wheels that use it).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from aiacc_build.wheels.cache import BuildCache
from aiacc_build.wheels.core import RECIPE
from aiacc_build.wheels.driver import Builder
from aiacc_build.paths import NATIVE_DIR

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

NONCE = uuid.uuid4().hex  # every run touches differently: an earlier run's entries can never answer


def _touch(path: Path, comment: str) -> None:
    path.write_text(path.read_text() + f"\n{comment} {NONCE}\n")


def _entries(root: Path) -> set[Path]:
    return {
        p
        for p in root.glob("*/??/*")
        if not p.is_relative_to(root / "uv") and not p.is_relative_to(root / "conan-home")
    }


@pytest.fixture
def shared_cache(local_build):
    """The session's cache; the entries this test adds (touched sources) are removed afterwards."""
    root = local_build.cache_dir
    before = _entries(root)
    yield BuildCache(root)
    for path in _entries(root) - before:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


@pytest.mark.slow
def test_rebuilds_follow_exactly_what_changed(local_build, shared_cache, tmp_path, monkeypatch):
    native = tmp_path / "native"
    shutil.copytree(NATIVE_DIR, native, ignore=shutil.ignore_patterns("build", "build-*", "__pycache__", "*.egg-info"))
    if (NATIVE_DIR.parent / RECIPE).is_dir():  # the conan recipe builds the core of the native/ beside it
        shutil.copytree(NATIVE_DIR.parent / RECIPE, tmp_path / RECIPE, ignore=shutil.ignore_patterns("__pycache__"))
    # The bindings' engine takes Gloo from recipes/gloo beside native/; its build stays the session's (cached).
    shutil.copytree(NATIVE_DIR.parent / "recipes" / "gloo", tmp_path / "recipes" / "gloo")
    monkeypatch.setenv("GLOO_CACHE_DIR", str(NATIVE_DIR.parent / ".cache" / "gloo"))
    # ... and the MPI plugins' headers from recipes/mpi, whose unpacked root stays the session's too
    shutil.copytree(NATIVE_DIR.parent / "recipes" / "mpi", tmp_path / "recipes" / "mpi")
    monkeypatch.setenv("MPI_CACHE_DIR", os.environ.get("MPI_CACHE_DIR") or str(NATIVE_DIR.parent / ".cache" / "mpi"))
    cache = shared_cache
    info, plan = local_build.release.info, local_build.torch_plan

    def build():
        report = Builder(cache, tmp_path / "dist", native_dir=native).build(info, plan)
        assert not report.failures, "\n".join(f.error for f in report.failures)
        (result,) = report.results
        return report, result

    # an identical copy of the sources: every step is found in the cache
    report, result = build()
    assert result.reused and report.core_builds == 0 and report.common.reused
    assert result.fingerprint == local_build.torch_result.fingerprint
    previous = result

    # one binding source changed: its wheel is rebuilt against the cached core; nothing else
    _touch(native / "bindings" / "torch" / "src" / "ops_cpu.cpp", "// touched by test_build_incremental")
    report, result = build()
    assert not result.reused and result.fingerprint != previous.fingerprint
    assert result.core is not None and result.core.reused and report.core_builds == 0
    assert report.common.reused
    assert result.smoke is not None and not result.smoke.reused  # a new wheel is tested again
    previous = result

    # one core source changed: the core is compiled once, the wheel relinked against it
    _touch(native / "core" / "src" / "status.cpp", "// touched by test_build_incremental")
    report, result = build()
    assert report.core_builds == 1 and result.core is not None and not result.core.reused
    assert result.core.backend == ("conan" if (tmp_path / RECIPE).is_dir() else "cmake")
    assert not result.reused and result.fingerprint != previous.fingerprint
    assert report.common.reused
    previous = result

    # the core's test suite is not an input of any wheel
    _touch(native / "core" / "tests" / "test_api.cpp", "// touched by test_build_incremental")
    report, result = build()
    assert result.reused and report.core_builds == 0

    # one runtime source changed: perseus-common is rebuilt, the wheel reused but tested with it
    _touch(native / "runtime" / "perseus" / "__init__.py", "# touched by test_build_incremental")
    report, result = build()
    assert not report.common.reused
    assert result.reused and result.fingerprint == previous.fingerprint
    assert result.smoke is not None and not result.smoke.reused
