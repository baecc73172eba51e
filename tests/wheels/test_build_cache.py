"""Content digests and the content-addressed cache."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from aiacc_build.wheels.cache import ENTRY_FILE, BuildCache
from aiacc_build.hashing import inputs_key, source_files, tree_digest


def _tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.cpp").write_text("int a() { return 1; }\n")
    (root / "CMakeLists.txt").write_text("project(x)\n")
    return root


def test_tree_digest_follows_content_not_timestamps(tmp_path):
    root = _tree(tmp_path / "t")
    before = tree_digest(root)
    later = time.time() + 100
    os.utime(root / "src" / "a.cpp", (later, later))
    assert tree_digest(root) == before
    (root / "src" / "a.cpp").write_text("int a() { return 2; }\n")
    assert tree_digest(root) != before


def test_tree_digest_ignores_build_outputs_and_sees_new_files(tmp_path):
    root = _tree(tmp_path / "t")
    before = tree_digest(root)
    (root / "build").mkdir()
    (root / "build" / "x.o").write_text("object")
    (root / "src" / "__pycache__").mkdir()
    (root / "src" / "__pycache__" / "m.pyc").write_bytes(b"\0")
    assert tree_digest(root) == before
    assert [p.name for p in source_files(root)] == ["CMakeLists.txt", "a.cpp"]
    (root / "src" / "b.h").write_text("#pragma once\n")
    assert tree_digest(root) != before


def test_tree_digest_counts_renames_and_the_executable_bit(tmp_path):
    root = _tree(tmp_path / "t")
    before = tree_digest(root)
    (root / "src" / "a.cpp").chmod(0o755)
    assert tree_digest(root) != before
    (root / "src" / "a.cpp").chmod(0o644)
    (root / "src" / "a.cpp").rename(root / "src" / "z.cpp")
    assert tree_digest(root) != before


def test_inputs_key_is_order_independent_and_kind_specific():
    assert inputs_key("core", {"a": 1, "b": [1, 2]}) == inputs_key("core", {"b": [1, 2], "a": 1})
    assert inputs_key("core", {"a": 1}) != inputs_key("wheel", {"a": 1})
    assert inputs_key("core", {"a": 1}) != inputs_key("core", {"a": 2})


def test_ensure_builds_once_then_reuses(tmp_path):
    cache = BuildCache(tmp_path / "cache")
    calls = []

    def make(path: Path, meta: dict) -> None:
        calls.append(path)
        (path / "out.txt").write_text("payload")
        meta["size"] = 7

    first = cache.ensure("thing", {"x": 1}, make)
    second = cache.ensure("thing", {"x": 1}, make)
    assert len(calls) == 1
    assert (first.hit, second.hit) == (False, True)
    assert second.path == first.path and (second.path / "out.txt").read_text() == "payload"
    assert second.meta == {"size": 7}
    cache.ensure("thing", {"x": 2}, make)
    assert len(calls) == 2


def test_failed_build_leaves_no_entry_and_is_retried(tmp_path):
    cache = BuildCache(tmp_path / "cache")

    def broken(path: Path, meta: dict) -> None:
        (path / "half-written").write_text("x")
        raise RuntimeError("compiler crashed")

    with pytest.raises(RuntimeError, match="compiler crashed"):
        cache.ensure("thing", {"x": 1}, broken)
    key = cache.key("thing", {"x": 1})
    assert cache.get("thing", key) is None
    assert not (cache.entry_dir("thing", key) / ENTRY_FILE).exists()

    entry = cache.ensure("thing", {"x": 1}, lambda p, m: (p / "ok").write_text("y"))
    assert not (entry.path / "half-written").exists()
    assert (entry.path / "ok").is_file()


def test_disabled_cache_never_reuses_and_cleans_up(tmp_path):
    cache = BuildCache(tmp_path / "cache", enabled=False)
    calls = []
    a = cache.ensure("thing", {"x": 1}, lambda p, m: calls.append(p))
    b = cache.ensure("thing", {"x": 1}, lambda p, m: calls.append(p))
    assert len(calls) == 2 and not a.hit and not b.hit
    assert not (tmp_path / "cache").exists()
    scratch = a.path
    cache.close()
    assert not scratch.exists()


def test_workspaces_persist_only_with_the_cache_on(tmp_path):
    cache = BuildCache(tmp_path / "cache")
    with cache.workspace("tree", "k") as first:
        (first / "obj.o").write_text("object")
    with cache.workspace("tree", "k") as again:
        assert again == first and (again / "obj.o").is_file()
    off = BuildCache(tmp_path / "off", enabled=False)
    with off.workspace("tree", "k") as a, off.workspace("tree", "k") as b:
        assert a != b and not any(a.iterdir())
    off.close()
    assert not a.exists()


def test_cache_paths_are_absolute(tmp_path, monkeypatch):
    """Entries keep their paths (venvs, CMake trees, conan's home, which refuses relative ones)."""
    monkeypatch.chdir(tmp_path)
    cache = BuildCache(Path("rel/cache"), uv_dir=Path("rel/uv"))
    assert cache.root == tmp_path / "rel" / "cache" and cache.uv_cache == tmp_path / "rel" / "uv"
    assert BuildCache(Path("rel/cache")).uv_cache == tmp_path / "rel" / "cache" / "uv"
