"""A build record made from the wheels that lie in a mirror root, for wheels built elsewhere (the CI
workflow's cibuildwheel jobs download their artifacts into dist/<release>/ and index them).

Each cell of the release whose wheel (at naming.wheel_path) is present counts as built, with its
digest and size; the others are listed as not built. There is no build fingerprint: no cache key
exists for a build this tool did not run.
"""

from __future__ import annotations

from pathlib import Path

from .. import __version__, naming
from ..hashing import file_sha256
from ..wheels.record import BuildRecord, CellRecord, CommonRecord
from ..errors import BuildError
from ..matrix import Release

NOT_IN_MIRROR = "no wheel of this cell lies in the mirror folder (not built by this run)"


def _cell_wheel(root: Path, cell) -> Path | None:
    """The cell's wheel in the mirror folder: the release's name, else the same name with another platform tag
    (a wheel built outside the release's manylinux image carries the tag it proved: naming.wheel_filename)."""
    declared = root / naming.wheel_path(cell)
    if declared.is_file():
        return declared
    stem = declared.name[: -len(naming.wheel_filename(cell).rsplit("-", 1)[1])]  # up to the platform tag
    arch = f"_{cell.arch.value}.whl"  # the platform tag names the arch: an aarch64 cell never takes an x86_64 wheel
    found = sorted(w for w in declared.parent.glob(f"{stem}*{arch}") if "-" not in w.name[len(stem):])
    if len(found) > 1:
        raise BuildError(f"{declared.parent} holds {len(found)} wheels of cell {cell.key} ({', '.join(w.name for w in found)}): "
                         f"keep one")
    return found[0] if found else None


def record_from_wheels(release: Release, root: Path) -> BuildRecord:
    info = release.info
    common_path = naming.common_wheel_path(info)
    if not (root / common_path).is_file():
        raise BuildError(f"{root / common_path} is missing: every mirror holds perseus-common {info.version}")
    common = CommonRecord(
        file=naming.common_wheel_filename(info),
        path=common_path,
        version=info.version,
        sha256=file_sha256(root / common_path),
        size=(root / common_path).stat().st_size,
    )
    cells = []
    for cell in release.cells:
        wheel = _cell_wheel(root, cell)
        if wheel is not None:
            cells.append(
                CellRecord.for_cell(
                    cell,
                    platform=wheel.name[: -len(".whl")].split("-")[-1],
                    status="built",
                    reason="wheel found in the mirror folder",
                    sha256=file_sha256(wheel),
                    size=wheel.stat().st_size,
                )
            )
        else:
            cells.append(CellRecord.for_cell(cell, status="deferred", reason=NOT_IN_MIRROR))
    return BuildRecord(
        release=info.version, mirror_url=info.mirror_url, tool_version=__version__, common=common, cells=cells
    )
