"""The Caffe artifacts of a release, under the mirror root:

    caffe/patches/bvlc_caffe/<N>_<name>.patch                  the manual's `git apply` patches
    caffe/libperseus-caffe-<release>-<platform>.tar.gz         lib/libperseus-caffe.so, lib/libperseus_mpi_*.so,
                                                               include/perseus/{caffe,engine}.h

`publish_patches` copies the patches (source: published by every `aiacc-build index`); `write_artifacts`
puts this machine's archive (and the patches) into dist/<release>/; `expected` lists every one the matrix
declares (archives of another platform are deferred: built on that platform).
"""

from __future__ import annotations

import gzip
import io
import platform as _platform
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildError
from ..model import ReleaseInfo
from .steps import PATCH_DIR

CAFFE_DIR = "caffe"


@dataclass(frozen=True)
class Artifact:
    path: str  # relative to the mirror root
    kind: str  # "patch" | "library"
    platform: str | None  # libraries only


def patch_path(name: str) -> str:
    return f"{CAFFE_DIR}/patches/bvlc_caffe/{name}"


def archive_name(release: str, platform: str) -> str:
    return f"libperseus-caffe-{release}-{platform}.tar.gz"


def expected(info: ReleaseInfo, arches: tuple[str, ...]) -> list[Artifact]:
    if info.caffe is None:
        return []
    out = [Artifact(patch_path(p), "patch", None) for p in info.caffe.patches]
    for template in info.caffe.platforms:
        for arch in arches:
            plat = template.format(arch=arch)
            out.append(Artifact(f"{CAFFE_DIR}/{archive_name(info.version, plat)}", "library", plat))
    return out


def publish_patches(info: ReleaseInfo, root: Path) -> list[Path]:
    """The release's declared patches (recipes/caffe/patches/bvlc_caffe), copied unchanged under `root`."""
    if info.caffe is None:
        return []
    written = []
    for name in info.caffe.patches:
        source = PATCH_DIR / name
        if not source.is_file():
            raise BuildError(f"release {info.version} declares the Caffe patch {name}, and {source} is missing: "
                             f"restore it from git or fix `caffe.patches` in matrix/releases/{info.version}.yaml")
        target = root / patch_path(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        written.append(target)
    return written


def _add(tar: tarfile.TarFile, source: Path, name: str) -> None:
    info = tar.gettarinfo(str(source), arcname=name)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0  # the same build gives the same bytes
    with open(source, "rb") as f:
        tar.addfile(info, f)


def write_artifacts(release: str, library_prefix: Path, out: Path) -> list[Path]:
    """This machine's Caffe artifacts into `out` (dist/<release>): the patches and the archive of the
    installed libperseus-caffe at `library_prefix`."""
    lib = library_prefix / "lib" / "libperseus-caffe.so"
    if not lib.is_file():
        raise BuildError(f"no {lib}: run `aiacc-build caffe library --release {release}` "
                         f"(or the whole Caffe: `aiacc-build caffe build --release {release}`) first")
    written = []
    for patch in sorted(PATCH_DIR.glob("[1-9]_*.patch")):
        target = out / patch_path(patch.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(patch, target)
        written.append(target)
    plat = f"linux_{_platform.machine()}"
    target = out / CAFFE_DIR / archive_name(release, plat)
    top = f"libperseus-caffe-{release}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted((library_prefix / "lib").glob("*.so")) + sorted((library_prefix / "include").rglob("*.h")):
            _add(tar, path, f"{top}/{path.relative_to(library_prefix).as_posix()}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(buffer.getvalue())
    written.append(target)
    return written
