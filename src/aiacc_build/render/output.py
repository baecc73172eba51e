"""Rendered files and writing them: only files whose bytes changed are written.

Each output folder keeps `.rendered-files` (the list of files the last render wrote there) so that a
file the matrix no longer produces is removed, and nothing else in the folder is ever touched.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST_NAME = ".rendered-files"


@dataclass(frozen=True)
class RenderedFile:
    path: str  # relative to the release's output folder, '/'-separated
    content: str
    kind: str  # "conda", "docker", "ci", "install-script", "support"
    executable: bool = False

    @property
    def data(self) -> bytes:
        return self.content.encode("utf-8")


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def write_files(out_dir: Path, files: list[RenderedFile]) -> WriteReport:
    """Write `files` under `out_dir`, skipping identical ones; remove files the last render made and this one did not."""
    report = WriteReport()
    paths = [f.path for f in files]
    duplicates = sorted(p for p, n in Counter(paths).items() if n > 1)
    if duplicates:
        raise ValueError(f"two rendered files share a path: {', '.join(duplicates)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    previous = _read_manifest(out_dir)
    for rendered in files:
        target = out_dir / rendered.path
        data = rendered.data
        mode = 0o755 if rendered.executable else 0o644
        try:
            same = target.read_bytes() == data and (target.stat().st_mode & 0o777) == mode
        except FileNotFoundError:
            same = False
        if same:
            report.unchanged.append(rendered.path)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        report.written.append(rendered.path)
    current = set(paths)
    for stale in sorted(previous - current):
        stale_path = out_dir / stale
        if stale_path.is_file():
            stale_path.unlink()
            report.removed.append(stale)
            _remove_empty_parents(stale_path.parent, out_dir)
    manifest = "".join(f"{p}\n" for p in sorted(current))
    manifest_path = out_dir / MANIFEST_NAME
    if not manifest_path.exists() or manifest_path.read_text(encoding="utf-8") != manifest:
        manifest_path.write_text(manifest, encoding="utf-8")
    return report


def _read_manifest(out_dir: Path) -> set[str]:
    path = out_dir / MANIFEST_NAME
    if not path.is_file():
        return set()
    return {line for line in path.read_text(encoding="utf-8").splitlines() if line and ".." not in line.split("/")}


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
