"""`aiacc-build index`: turn dist/<release>/ into a complete mirror root.

Layout (every path from the mirror root):

    perseus_common-<release>-py3-none-any.whl     one per release, shared by every folder
    <folder>/<wheel>                              cpu/, cuda110/, ... (names from aiacc_build.naming)
    <folder>/simple/<project>/index.html          PEP 503: that folder's framework wheels + perseus-common
    simple/perseus-common/index.html              root index: perseus-common alone
    manifest.json                                 every cell, built or deferred, with digest and fingerprint
    mxnet/patches/<patch>                         the release's MXNet source patch (aiacc_build.mxnet_patch)
    caffe/patches/bvlc_caffe/<N>_<name>.patch     the Caffe patches (source: always published)
    caffe/libperseus-caffe-<release>-<plat>.tar.gz  libperseus-caffe, when `aiacc-build caffe package` made it
    SHA256SUMS                                    every published file (not the index pages)

Why perseus-common is in every folder's index: `pip install --index-url <mirror>/cpu/simple/
perseus_torch==<version>` then resolves the wheel's one requirement from the same index. The root
index is what the one-URL install adds: `pip install <wheel URL> --extra-index-url <mirror>/simple/`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import hints
from ..hashing import file_sha256
from ..wheels.record import BuildRecord, load_record, mirror_root
from ..wheels.wheelinfo import read_wheel
from ..errors import BuildError, ConfigurationError
from ..model import Framework
from ..naming import COMMON_DISTRIBUTION, MANIFEST_FILENAME, SIMPLE_INDEX_DIR, wheel_distribution
from ..paths import DIST_DIR
from ..render.output import RenderedFile
from .checksums import published_files, write_checksums
from ..caffe.package import Artifact, expected, publish_patches
from ..mxnet_patch import MxnetPatchRecord, publish as publish_mxnet_patch
from .manifest import CaffeArtifactRecord, Manifest, make_manifest
from .served import served_files, write_rendered
from .simple import IndexedFile, write_index


@dataclass(frozen=True)
class IndexResult:
    root: Path
    manifest: Manifest
    pages: tuple[str, ...]
    checksummed: tuple[str, ...]
    stale: tuple[str, ...]  # wheels lying in dist/ that no cell of the record built: not published


def _verify(root: Path, path: str, sha256: str) -> None:
    target = root / path
    if not target.is_file():
        raise BuildError(f"{target} is missing although the build record lists it: run `{hints.build(root.name, root.parent)}` again")
    if file_sha256(target) != sha256:
        raise BuildError(f"{target} changed since it was built (sha256 differs): run `{hints.build(root.name, root.parent)}` again")


def _remove_old_pages(root: Path) -> None:
    for candidate in [root / SIMPLE_INDEX_DIR, *root.glob(f"*/{SIMPLE_INDEX_DIR}")]:
        if candidate.is_dir():
            shutil.rmtree(candidate)


def _indexed(root: Path, project: str, path: str, sha256: str) -> IndexedFile:
    return IndexedFile(
        project=project, path=path, sha256=sha256, requires_python=read_wheel(root / path).requires_python
    )


def build_index(
    release: str, dist_dir: Path = DIST_DIR, from_wheels: bool = False, base_url: str | None = None
) -> IndexResult:
    """`base_url`: where this copy is served from; the install script written here defaults to it."""
    from ..matrix import load_release

    root = mirror_root(release, dist_dir)
    if from_wheels:
        from .collect import record_from_wheels

        loaded = load_release(release)
        record = record_from_wheels(loaded, root)
    else:
        found = load_record(release, dist_dir)
        if found is None:
            raise ConfigurationError(
                f"no build of release {release} in {dist_dir}: run `{hints.build(release, dist_dir)}` first"
            )
        record, loaded = found, load_release(release)
    if record.common is None:
        raise BuildError(f"the build of release {release} has no perseus-common wheel: run `{hints.build(release, dist_dir)}` again")
    arches = tuple(sorted({c.arch.value for c in loaded.cells}))
    publish_patches(loaded.info, root)  # source: every mirror has them, whatever was built
    caffe = caffe_records(root, expected(loaded.info, arches))
    return _publish(record, root, served_files(loaded, record, base_url), caffe, publish_mxnet_patch(loaded.info, root))


def caffe_records(root: Path, artifacts: list[Artifact]) -> list[CaffeArtifactRecord]:
    """The release's Caffe artifacts: built when `aiacc-build caffe package` put the file here."""
    out = []
    for a in artifacts:
        present = (root / a.path).is_file()
        out.append(CaffeArtifactRecord(
            path=a.path, kind=a.kind, platform=a.platform, status="built" if present else "deferred",
            sha256=file_sha256(root / a.path) if present else None,
            reason=None if present else f"not built here: run `aiacc-build caffe library` and `aiacc-build caffe package` "
                                        f"on {a.platform or 'any platform'}"))
    return out


def _publish(record: BuildRecord, root: Path, rendered_files: list[RenderedFile],
             caffe: list[CaffeArtifactRecord] | None = None,
             mxnet_patches: list[MxnetPatchRecord] | None = None) -> IndexResult:
    assert record.common is not None
    common = record.common
    _verify(root, common.path, common.sha256)
    for cell in record.built:
        assert cell.sha256 is not None
        _verify(root, cell.path, cell.sha256)

    _remove_old_pages(root)
    common_file = _indexed(root, COMMON_DISTRIBUTION, common.path, common.sha256)
    folders: dict[str, list[IndexedFile]] = {}
    for cell in record.built:
        assert cell.sha256 is not None
        folders.setdefault(cell.folder, []).append(_indexed(root, wheel_distribution(Framework(cell.framework)), cell.path, cell.sha256))
    pages = list(write_index(root, None, [common_file]))
    for folder, files in sorted(folders.items()):
        pages += write_index(root, folder, [*files, common_file])

    manifest = make_manifest(record, sorted(folders), caffe, mxnet_patches)
    (root / MANIFEST_FILENAME).write_text(manifest.model_dump_json(indent=2) + "\n")
    for rendered in rendered_files:
        write_rendered(root, rendered)

    known = {common.path: common.sha256, **{c.path: c.sha256 for c in record.built if c.sha256}}
    everything = published_files(root, excluded=set())
    stale = tuple(p for p in everything if p.endswith(".whl") and p not in known)
    listed = [p for p in everything if p not in stale]
    write_checksums(root, listed, known)
    return IndexResult(root=root, manifest=manifest, pages=tuple(pages), checksummed=tuple(listed), stale=stale)
