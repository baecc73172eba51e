"""The Caffe artifacts in the release output: `aiacc-build index` publishes the three patches (source) in every
mirror, and this platform's libperseus-caffe archive once `aiacc-build caffe package` made it (what dev/main.sh's
caffe-release stage does before its index stage), each "built" with its sha256 in manifest.json and SHA256SUMS."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess

import pytest

from aiacc_build.caffe.package import write_artifacts
from aiacc_build.hashing import file_sha256
from aiacc_build.index.mirror import build_index
from aiacc_build.paths import REPO_ROOT

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

PATCHES = ["caffe/patches/bvlc_caffe/1_perseus_distribute_train.patch", "caffe/patches/bvlc_caffe/2_cudnn_batchnorm.patch",
           "caffe/patches/bvlc_caffe/3_data_augmentation.patch"]
LIBRARY = f"caffe/libperseus-caffe-2.0.0-linux_{platform.machine()}.tar.gz"
CAFFE_BUILD = REPO_ROOT / "native" / "build-caffe"


def _sums(root) -> dict[str, str]:
    lines = (root / "SHA256SUMS").read_text().splitlines()
    return {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in lines}


def test_the_index_publishes_the_patches_and_this_platforms_library(local_build, tmp_path):
    dist = tmp_path / "dist"
    shutil.copytree(local_build.dist, dist, symlinks=True)
    root = dist / "2.0.0"
    shutil.rmtree(root / "caffe", ignore_errors=True)

    # without a packaged library: the patches are there anyway (source), the library is deferred with the fix
    build_index("2.0.0", dist)
    caffe = {r["path"]: r for r in json.loads((root / "manifest.json").read_text())["caffe"]}
    for path in PATCHES:
        assert caffe[path]["status"] == "built" and caffe[path]["sha256"] == file_sha256(REPO_ROOT / "recipes" / "caffe" / "patches" / "bvlc_caffe" / path.rsplit("/", 1)[1])
        assert _sums(root)[path] == caffe[path]["sha256"]
    assert caffe[LIBRARY]["status"] == "deferred" and "aiacc-build caffe library" in caffe[LIBRARY]["reason"]

    # after `caffe package` (the main job's caffe-release stage): built, with the archive's sha256
    if not (CAFFE_BUILD / "lib" / "libperseus-caffe.so").is_file():
        pytest.fail(f"no {CAFFE_BUILD}/lib/libperseus-caffe.so: source dev/lib.sh && caffe_library")
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(CAFFE_BUILD), "--prefix", str(prefix)], check=True, stdout=subprocess.PIPE)
    write_artifacts("2.0.0", prefix, root)
    build_index("2.0.0", dist)
    caffe = {r["path"]: r for r in json.loads((root / "manifest.json").read_text())["caffe"]}
    assert caffe[LIBRARY]["status"] == "built" and caffe[LIBRARY]["reason"] is None
    assert caffe[LIBRARY]["sha256"] == file_sha256(root / LIBRARY) == _sums(root)[LIBRARY]
    other = [p for p in caffe if p.endswith(".tar.gz") and p != LIBRARY]
    assert other and all(caffe[p]["status"] == "deferred" for p in other)
