"""perseus-mxnet-sync-bn.patch as a release artifact: the 2.0.0 matrix declares it for apache/mxnet 1.9.1, the
index copies it into the mirror (mxnet/patches/), lists it in manifest.json with its sha256 and in SHA256SUMS,
and SUPPORT.md / support.json name it."""

import json
from pathlib import Path

import pytest

from aiacc_build import mxnet_patch
from aiacc_build.errors import BuildError
from aiacc_build.hashing import file_sha256
from aiacc_build.index.checksums import published_files, write_checksums
from aiacc_build.index.manifest import Manifest
from aiacc_build.matrix import load_release
from aiacc_build.render.support_list import render_support

REPO_ROOT = Path(__file__).resolve().parents[2]
PATCH = REPO_ROOT / "recipes" / "mxnet" / "patches" / "perseus-mxnet-sync-bn.patch"


def test_the_2_0_0_matrix_declares_the_patch_for_the_pinned_mxnet_commit():
    info = load_release("2.0.0").info
    assert info.mxnet_patch is not None
    assert (info.mxnet_patch.upstream_version, info.mxnet_patch.patch) == ("1.9.1", "perseus-mxnet-sync-bn.patch")
    pinned = [line.split()[1] for line in (REPO_ROOT / "recipes" / "mxnet" / "upstream.txt").read_text().splitlines()
              if line.startswith("commit ")]
    assert pinned == [info.mxnet_patch.upstream_commit]
    assert info.mxnet_patch.upstream_commit in PATCH.read_text().split("diff --git")[0]
    # the 1.5.0 cells predate mxnet 1.9.1: the patch is verified against 1.9.1 only
    assert load_release("1.5.0").info.mxnet_patch is None


def test_published_into_the_mirror_with_its_digest(tmp_path):
    info = load_release("2.0.0").info
    records = mxnet_patch.publish(info, tmp_path)
    assert [r.path for r in records] == ["mxnet/patches/perseus-mxnet-sync-bn.patch"]
    published = tmp_path / records[0].path
    assert published.read_bytes() == PATCH.read_bytes()
    assert records[0].sha256 == file_sha256(PATCH)
    assert records[0].upstream == "apache/mxnet 1.9.1"
    listed = published_files(tmp_path, excluded=set())
    assert listed == ["mxnet/patches/perseus-mxnet-sync-bn.patch"]
    sums = write_checksums(tmp_path, listed, {}).read_text()
    assert sums == "{}  mxnet/patches/perseus-mxnet-sync-bn.patch\n".format(file_sha256(PATCH))
    # manifest.json's field (Manifest is what `aiacc-build index` writes and the installer reads)
    assert Manifest.model_fields["mxnet_patches"].annotation == list[mxnet_patch.MxnetPatchRecord]
    assert json.loads(records[0].model_dump_json())["sha256"] == file_sha256(PATCH)


def test_a_missing_patch_file_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(mxnet_patch, "PATCH_DIR", tmp_path)
    with pytest.raises(BuildError, match="perseus-mxnet-sync-bn.patch.*restore it from git"):
        mxnet_patch.publish(load_release("2.0.0").info, tmp_path / "mirror")


def test_support_names_the_patch():
    loaded = load_release("2.0.0")
    files = {f.path: f.content for f in render_support(loaded.info, loaded.cells, None)}
    section = files["SUPPORT.md"].split("## MXNet source builds")[1]
    assert "| `mxnet/patches/perseus-mxnet-sync-bn.patch` | apache/mxnet 1.9.1 | " \
           "`3f8f3be9987e259491ddc5a78aa9c6903e0b21e3` |" in section
    assert "-DUSE_PERSEUS=ON" in section
    assert json.loads(files["support.json"])["mxnet_patches"][0]["path"] == "mxnet/patches/perseus-mxnet-sync-bn.patch"
