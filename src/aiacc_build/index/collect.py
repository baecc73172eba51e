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
        wheel = root / naming.wheel_path(cell)
        if wheel.is_file():
            cells.append(
                CellRecord.for_cell(
                    cell,
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
