"""The content-addressed build cache: one directory per (kind, key), complete once entry.json exists.

An entry is built in place (venvs and CMake trees hold absolute paths and cannot be moved) under a
file lock; `entry.json`, written last, marks it complete. A directory without it is the remains of an
interrupted build and is wiped before the next attempt. With the cache disabled every step builds in
a private temporary directory that is removed when the build session ends: the same code path, no
reuse.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..paths import DEFAULT_CACHE_DIR
from ..hashing import inputs_key

ENTRY_FILE = "entry.json"


@dataclass(frozen=True)
class CacheEntry:
    kind: str
    key: str
    path: Path
    meta: dict[str, Any]
    hit: bool  # True when it existed before this session asked for it


@dataclass
class BuildCache:
    root: Path = DEFAULT_CACHE_DIR
    enabled: bool = True
    # uv's download/unpack cache; another cache's lets a fresh build cache skip framework downloads
    uv_dir: Path | None = None
    _scratch: Path | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        # absolute: venvs, CMake trees and conan's home keep these paths, and conan refuses relative ones
        self.root = Path(self.root).absolute()
        if self.uv_dir is not None:
            self.uv_dir = Path(self.uv_dir).absolute()

    def key(self, kind: str, inputs: dict[str, Any]) -> str:
        return inputs_key(kind, inputs)

    @property
    def uv_cache(self) -> Path:
        return self.uv_dir or self.root / "uv"

    def entry_dir(self, kind: str, key: str) -> Path:
        if not self.enabled:
            return self._scratch_dir() / kind / key
        return self.root / kind / key[:2] / key

    def get(self, kind: str, key: str) -> CacheEntry | None:
        if not self.enabled:
            return None
        path = self.entry_dir(kind, key)
        marker = path / ENTRY_FILE
        if not marker.is_file():
            return None
        meta = json.loads(marker.read_text())
        return CacheEntry(kind=kind, key=key, path=path, meta=meta.get("meta", {}), hit=True)

    def ensure(self, kind: str, inputs: dict[str, Any], build: Callable[[Path, dict[str, Any]], None]) -> CacheEntry:
        """The entry of these inputs: reused when complete, else made by `build(directory, meta)`.

        `build` fills the directory and may record facts in `meta`. If it raises, the directory stays
        incomplete (no entry.json), so it is never mistaken for a result, and is wiped next time.
        """
        key = self.key(kind, inputs)
        found = self.get(kind, key)
        if found is not None:
            return found
        path = self.entry_dir(kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            found = self.get(kind, key)  # a concurrent build may have finished it while we waited
            if found is not None:
                return found
            if path.exists():
                shutil.rmtree(path)
            path.mkdir()
            meta: dict[str, Any] = {}
            build(path, meta)
            record = {"kind": kind, "key": key, "inputs": inputs, "meta": meta, "created": time.time()}
            (path / ENTRY_FILE).write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
        return CacheEntry(kind=kind, key=key, path=path, meta=meta, hit=False)

    @contextmanager
    def workspace(self, kind: str, key: str) -> Iterator[Path]:
        """A persistent, locked work directory (an incremental build tree); a new empty one every time when
        the cache is disabled, so nothing is ever reused."""
        if not self.enabled:
            yield Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=self._scratch_dir()))
            return
        path = self.entry_dir(kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            path.mkdir(exist_ok=True)
            yield path

    def _scratch_dir(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="aiacc-build-nocache-"))
        return self._scratch

    def close(self) -> None:
        """Remove the private scratch tree of a cache-less session."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
