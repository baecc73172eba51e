"""Content digests, the one sha256 helper of the tool: of a file, of bytes, of a stream as it is written,
of a source tree and of a build's inputs. Every cache key is made here."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, BinaryIO

# Build outputs and editor litter that never count as sources (a stray `pip wheel .` leaves build/).
IGNORED_DIRS = frozenset({"__pycache__", "build", "dist", "_skbuild", ".git", ".pytest_cache", ".mypy_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo", ".so", ".whl", ".egg-info", ".o", ".a", "~")

# Bump when the layout of cache entries or the meaning of a key changes: old entries are then unused.
KEY_SCHEMA = 1


def _ignored(name: str) -> bool:
    return name.startswith(".") or name in IGNORED_DIRS or name.endswith(IGNORED_SUFFIXES)


def source_files(root: Path, exclude: frozenset[str] = frozenset()) -> list[Path]:
    """The files of a source tree that count as inputs, sorted by their path relative to root.

    `exclude`: top-level entries of root that do not count (e.g. a test suite the build never compiles).
    """
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        top = Path(dirpath) == root
        dirnames[:] = sorted(d for d in dirnames if not _ignored(d) and not (top and d in exclude))
        found.extend(Path(dirpath) / f for f in filenames if not _ignored(f))
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def tree_digest(root: Path, exclude: frozenset[str] = frozenset()) -> str:
    """SHA-256 over every source file's relative path, executable bit and content.

    Timestamps do not count: a checkout at another time, or a touched-but-unchanged file, gives the
    same digest, so caches survive fresh clones in CI.
    """
    if not root.is_dir():
        raise FileNotFoundError(f"source tree {root} does not exist")
    outer = hashlib.sha256()
    for path in source_files(root, exclude):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            content = ("symlink:" + os.readlink(path)).encode()
        else:
            content = path.read_bytes()
        executable = os.access(path, os.X_OK) and not path.is_symlink()
        outer.update(rel.encode() + b"\0" + (b"x" if executable else b"-") + b"\0")
        outer.update(hashlib.sha256(content).digest())
    return outer.hexdigest()


def bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class HashingWriter:
    """Writes through to `out`, keeping the sha256 and size of what was written (a download or an
    extraction checked as it streams, never read back)."""

    def __init__(self, out: BinaryIO) -> None:
        self.out, self.size, self._digest = out, 0, hashlib.sha256()

    def write(self, chunk: bytes) -> None:
        self.out.write(chunk)
        self._digest.update(chunk)
        self.size += len(chunk)

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def inputs_key(kind: str, inputs: dict[str, Any]) -> str:
    """The cache key of a build step: SHA-256 of its canonical JSON inputs (sorted keys)."""
    payload = json.dumps({"kind": kind, "schema": KEY_SCHEMA, "inputs": inputs}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()
