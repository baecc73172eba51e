"""The MXNet source patch of a release (manual 4.7, `perseus-mxnet-sync-bn.patch`): a file of this repository
(recipes/mxnet/patches/), published unchanged under the mirror root as

    mxnet/patches/<patch>        for apache/mxnet <upstream_version> (commit <upstream_commit>)

`aiacc-build index` copies it into the mirror, lists it in manifest.json (`mxnet_patches`, with its sha256)
and SHA256SUMS; SUPPORT.md names it. Nothing is built: the user's MXNet build compiles it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel

from .errors import BuildError
from .hashing import file_sha256
from .model import ReleaseInfo
from .paths import REPO_ROOT

PATCH_DIR = REPO_ROOT / "recipes" / "mxnet" / "patches"
MXNET_DIR = "mxnet"


class MxnetPatchRecord(BaseModel):
    """manifest.json's entry of the patch: where it is, what it applies to, its digest."""

    path: str  # relative to the mirror root
    upstream: str  # "apache/mxnet <version>"
    upstream_commit: str
    sha256: str


def patch_path(name: str) -> str:
    return f"{MXNET_DIR}/patches/{name}"


def source(info: ReleaseInfo) -> Path | None:
    """The repository's copy of the release's patch (None: the release has none)."""
    if info.mxnet_patch is None:
        return None
    path = PATCH_DIR / info.mxnet_patch.patch
    if not path.is_file():
        raise BuildError(f"release {info.version} declares mxnet_patch {info.mxnet_patch.patch}, and {path} is "
                         f"missing: restore it from git or fix `mxnet_patch` in matrix/releases/{info.version}.yaml")
    return path


def publish(info: ReleaseInfo, root: Path) -> list[MxnetPatchRecord]:
    """Copy the release's patch into the mirror root; its manifest record."""
    path = source(info)
    if path is None:
        return []
    assert info.mxnet_patch is not None
    rel = patch_path(path.name)
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, target)
    return [MxnetPatchRecord(path=rel, upstream=f"apache/mxnet {info.mxnet_patch.upstream_version}",
                             upstream_commit=info.mxnet_patch.upstream_commit, sha256=file_sha256(target))]
