"""The build record of a release: what `aiacc-build build` made (and deferred), read by `aiacc-build index`.

It lives beside the mirror root (dist/<release>.record.json), not inside it: it is the build's
bookkeeping, the published form is manifest.json. Cells built by an earlier run stay recorded as long
as their file in dist/ is unchanged, so `build` then `build --cells X` publishes both.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from .. import __version__
from ..hashing import file_sha256
from ..model import Cell
from ..naming import accelerator_folder, common_wheel_filename, wheel_filename, wheel_path
from ..paths import DIST_DIR

if TYPE_CHECKING:
    from .driver import BuildReport


class FrameworkBuildRecord(BaseModel):
    requirement: str
    index_url: str | None
    cuda_variant: str | None
    cxx11_abi: bool | None


class CellRecord(BaseModel):
    key: str
    framework: str
    framework_version: str
    cuda: str | None
    python: str | None
    arch: str
    folder: str
    file: str
    path: str  # folder/file: the key of a wheel everywhere
    status: Literal["built", "deferred"]
    reason: str
    framework_build: FrameworkBuildRecord
    framework_file: str | None = None  # the exact upstream wheel built against (and tested with)
    download_size: int | None = None  # bytes of that wheel still to fetch to build here (0: on disk)
    sha256: str | None = None
    size: int | None = None
    fingerprint: str | None = None  # cache key: digest of every input of the build
    repaired_platform: str | None = None  # the platform tag auditwheel gave before re-tagging
    toolchain: str | None = None
    note: str | None = None  # a caveat of this build, e.g. a native build needing a newer glibc than its tag
    tested: str | None = None  # what the post-build test ran, in a fresh environment

    @classmethod
    def for_cell(cls, cell: Cell, platform: str | None = None, **fields: object) -> CellRecord:
        """`platform`: the tag the built wheel carries when it is not the release's (naming.wheel_filename)."""
        return cls(
            key=cell.key,
            framework=cell.framework.value,
            framework_version=cell.framework_version,
            cuda=cell.cuda,
            python=cell.python,
            arch=cell.arch.value,
            folder=accelerator_folder(cell),
            file=wheel_filename(cell, platform),
            path=wheel_path(cell, platform),
            framework_build=FrameworkBuildRecord(
                requirement=cell.build.requirement,
                index_url=cell.build.index_url,
                cuda_variant=cell.build.cuda_variant,
                cxx11_abi=cell.build.cxx11_abi,
            ),
            **fields,  # type: ignore[arg-type]
        )


class CommonRecord(BaseModel):
    file: str
    path: str
    version: str
    sha256: str
    size: int
    fingerprint: str | None = None  # None: built outside `aiacc-build build` (e.g. by CI), no cache key


class BuildRecord(BaseModel):
    release: str
    mirror_url: str
    tool_version: str
    common: CommonRecord | None
    cells: list[CellRecord]

    @property
    def built(self) -> list[CellRecord]:
        return [c for c in self.cells if c.status == "built"]


def mirror_root(release: str, dist_dir: Path = DIST_DIR) -> Path:
    return dist_dir / release


def record_path(release: str, dist_dir: Path = DIST_DIR) -> Path:
    return dist_dir / f"{release}.record.json"


def load_record(release: str, dist_dir: Path = DIST_DIR) -> BuildRecord | None:
    path = record_path(release, dist_dir)
    if not path.is_file():
        return None
    return BuildRecord.model_validate_json(path.read_text())


def save_record(record: BuildRecord, dist_dir: Path = DIST_DIR) -> Path:
    path = record_path(record.release, dist_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(record.model_dump_json(indent=2) + "\n")
    tmp.replace(path)
    return path


def record_of(report: BuildReport, root: Path, previous: BuildRecord | None) -> BuildRecord:
    """The record of a build run: its results and failures, the plan's deferred cells, and the cells an
    earlier run built whose file in dist/ is unchanged."""
    assert report.common is not None
    release = report.release
    earlier = {c.key: c for c in (previous.built if previous else [])}
    results = {r.plan.cell.key: r for r in report.results}
    failures = {f.plan.cell.key: f for f in report.failures}
    cells = []
    for p in report.plan.cells:
        framework = {
            "framework_file": p.framework.filename if p.framework else None,
            "download_size": p.download_size,
        }
        if p.cell.key in results:
            r = results[p.cell.key]
            cells.append(
                CellRecord.for_cell(
                    p.cell,
                    platform=r.path.name[: -len(".whl")].split("-")[-1],
                    status="built",
                    reason=p.reason,
                    sha256=r.sha256,
                    size=r.size,
                    fingerprint=r.fingerprint,
                    repaired_platform=r.repaired_platform,
                    toolchain=r.toolchain,
                    note=r.note,
                    tested=r.smoke.description if r.smoke else None,
                    **framework,
                )
            )
        elif p.cell.key in failures:
            cells.append(
                CellRecord.for_cell(
                    p.cell,
                    status="deferred",
                    reason=f"build failed here: {failures[p.cell.key].error}",
                    **framework,
                )
            )
        elif p.cell.key in earlier and _unchanged(root, earlier[p.cell.key]):
            cells.append(earlier[p.cell.key])  # built by an earlier run, its file still in dist/
        else:
            cells.append(CellRecord.for_cell(p.cell, status="deferred", reason=p.reason, **framework))
    common = report.common
    return BuildRecord(
        release=release.version,
        mirror_url=release.mirror_url,
        tool_version=__version__,
        common=CommonRecord(
            file=common.path.name,
            path=common_wheel_filename(release),
            version=release.version,
            sha256=common.sha256,
            size=common.path.stat().st_size,
            fingerprint=common.fingerprint,
        ),
        cells=cells,
    )


def _unchanged(root: Path, record: CellRecord) -> bool:
    target = root / record.path
    return target.is_file() and record.sha256 is not None and file_sha256(target) == record.sha256
