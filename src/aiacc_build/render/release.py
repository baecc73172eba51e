"""Render every file of one release: conda, Docker, CI, install script, support list."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..wheels.record import BuildRecord, load_record
from ..model import Cell, ReleaseInfo
from .ci import render_ci
from .conda import render_conda
from .docker import base_image_labels, render_docker
from .install_script import render_install_script
from .output import RenderedFile, WriteReport, write_files
from .support import BuildHost
from .support_list import render_support
from .variants import arch_variants

KINDS = ("conda", "docker", "ci", "install-script", "support")


def render_release(
    release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell], host: BuildHost, record: BuildRecord | None = None
) -> list[RenderedFile]:
    """`record`: the release's build record, the only source of the support list's statuses."""
    if not cells:
        raise ValueError(f"release {release.version} has no cells")
    foreign = [c.key for c in cells if c.release_version != release.version]
    if foreign:
        raise ValueError(f"cells of another release given to release {release.version}: {', '.join(foreign[:3])}")
    files: list[RenderedFile] = []
    for variants in arch_variants(cells):
        for python in variants[0].env_pythons:
            files.append(render_conda(variants, python))
    files += render_docker(release, cells, host)
    files.append(render_ci(release, cells))
    files.append(render_install_script(release, cells))
    files += render_support(release, cells, record, base_image_labels(cells, host))
    return files


@dataclass
class ReleaseResult:
    release: str
    out_dir: Path
    cells: int
    files_by_kind: dict[str, int]
    report: WriteReport
    seconds: float
    written_by_kind: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict:
        return {
            "release": self.release,
            "out": str(self.out_dir),
            "cells": self.cells,
            "files": self.files_by_kind,
            "written": self.report.written,
            "unchanged": len(self.report.unchanged),
            "removed": self.report.removed,
            "seconds": round(self.seconds, 4),
        }


def render_release_to(release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell], out_dir: Path, host: BuildHost) -> ReleaseResult:
    start = time.perf_counter()
    files = render_release(release, cells, host, load_record(release.version, out_dir.parent))
    return write_release(release, cells, files, out_dir, start)


def render_releases_to(releases: list, out: Path, host: BuildHost) -> list[ReleaseResult]:
    """Render every release in memory first, then write: a release that cannot render writes nothing.
    A build record beside a release's folder (OUT/<release>.record.json) fills its support list."""
    start = time.perf_counter()
    rendered = [(r, render_release(r.info, r.cells, host, load_record(r.info.version, out))) for r in releases]
    return [write_release(r.info, r.cells, files, out / r.info.version, start) for r, files in rendered]


def write_release(
    release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell], files: list[RenderedFile], out_dir: Path, start: float
) -> ReleaseResult:
    report = write_files(out_dir, files)
    kind_of = {f.path: f.kind for f in files}
    return ReleaseResult(
        release=release.version,
        out_dir=out_dir,
        cells=len(cells),
        files_by_kind=dict(Counter(f.kind for f in files)),
        report=report,
        seconds=time.perf_counter() - start,
        written_by_kind=dict(Counter(kind_of[p] for p in report.written)),
    )
