"""manifest.json: every cell of a release (built or deferred, and why), its file, digest and fingerprint.

No timestamps: the same build gives the same bytes, so a regenerated manifest diffs cleanly.
"""

from __future__ import annotations

from pydantic import BaseModel

from ..mxnet_patch import MxnetPatchRecord
from ..wheels.record import BuildRecord, CellRecord, CommonRecord
from ..naming import CHECKSUMS_FILENAME, simple_index_dir

MANIFEST_SCHEMA_VERSION = 1


class CaffeArtifactRecord(BaseModel):
    """A Caffe artifact of the release (not a wheel): a patch or a libperseus-caffe archive."""

    path: str
    kind: str  # "patch" | "library"
    platform: str | None = None
    status: str  # "built" | "deferred"
    sha256: str | None = None
    reason: str | None = None  # why deferred


class Manifest(BaseModel):
    schema_version: int = MANIFEST_SCHEMA_VERSION
    release: str
    mirror_url: str  # where the release is published; every path below is relative to it
    tool_version: str
    checksums: str = CHECKSUMS_FILENAME
    # folder -> its index, relative to the mirror root; "" is the root index (perseus-common alone)
    indexes: dict[str, str]
    common: CommonRecord
    cells: list[CellRecord]
    caffe: list[CaffeArtifactRecord] = []
    mxnet_patches: list[MxnetPatchRecord] = []  # source patches for an MXNet build (perseus-mxnet-sync-bn.patch)

    @property
    def built(self) -> list[CellRecord]:
        return [c for c in self.cells if c.status == "built"]


def make_manifest(record: BuildRecord, folders: list[str],
                  caffe: list[CaffeArtifactRecord] | None = None,
                  mxnet_patches: list[MxnetPatchRecord] | None = None) -> Manifest:
    if record.common is None:
        raise ValueError("the build record has no perseus-common wheel")
    indexes = {"": simple_index_dir(None)}
    indexes.update({folder: simple_index_dir(folder) for folder in sorted(folders)})
    return Manifest(
        release=record.release,
        mirror_url=record.mirror_url,
        tool_version=record.tool_version,
        indexes=indexes,
        common=record.common,
        cells=sorted(record.cells, key=lambda c: c.key),
        caffe=caffe or [],
        mxnet_patches=mxnet_patches or [],
    )
