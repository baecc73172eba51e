"""The Caffe artifacts of a release: `aiacc-build caffe package` writes the patches and this platform's
libperseus-caffe archive; the mirror lists them in manifest.json (built or deferred) and SHA256SUMS."""

import platform
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from aiacc_build.hashing import file_sha256
from aiacc_build.caffe.package import expected, publish_patches, write_artifacts
from aiacc_build.index.checksums import published_files
from aiacc_build.index.mirror import caffe_records
from aiacc_build.matrix import load_release

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

AIACC_BUILD = str(Path(sys.executable).with_name("aiacc-build"))


def test_both_releases_declare_the_three_patches_and_an_archive_per_platform():
    for version, arches in (("1.5.0", ("x86_64",)), ("2.0.0", ("aarch64", "x86_64"))):
        info = load_release(version).info
        paths = [a.path for a in expected(info, arches)]
        assert paths[:3] == ["caffe/patches/bvlc_caffe/1_perseus_distribute_train.patch",
                             "caffe/patches/bvlc_caffe/2_cudnn_batchnorm.patch",
                             "caffe/patches/bvlc_caffe/3_data_augmentation.patch"]
        assert paths[3:] == ["caffe/libperseus-caffe-{}-linux_{}.tar.gz".format(version, a) for a in arches]
        assert info.caffe.upstream_commit == "99bd99795dcdf0b1d3086a8d67ab1782a8a08383"


def test_package_then_manifest_and_sums(library_build, tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(library_build), "--prefix", str(prefix)], check=True,
                   stdout=subprocess.PIPE)
    out = tmp_path / "dist" / "2.0.0"
    written = write_artifacts("2.0.0", prefix, out)
    archive = out / "caffe" / "libperseus-caffe-2.0.0-linux_{}.tar.gz".format(platform.machine())
    assert archive in written
    with tarfile.open(str(archive)) as tar:
        names = sorted(tar.getnames())
    assert "libperseus-caffe-2.0.0/lib/libperseus-caffe.so" in names
    assert "libperseus-caffe-2.0.0/include/perseus/caffe.h" in names
    assert "libperseus-caffe-2.0.0/include/perseus/engine.h" in names
    first = archive.read_bytes()
    write_artifacts("2.0.0", prefix, out)
    assert archive.read_bytes() == first  # the same inputs give the same bytes

    info = load_release("2.0.0").info
    records = {r.path: r for r in caffe_records(out, expected(info, ("aarch64", "x86_64")))}
    assert all(r.status == "built" and r.sha256 == file_sha256(out / p) for p, r in records.items()
               if "aarch64" not in p)
    other = records["caffe/libperseus-caffe-2.0.0-linux_aarch64.tar.gz"]
    assert other.status == "deferred" and "linux_aarch64" in other.reason
    listed = published_files(out, excluded=set())
    assert "caffe/patches/bvlc_caffe/1_perseus_distribute_train.patch" in listed
    assert archive.relative_to(out).as_posix() in listed


def test_package_without_a_built_library_says_what_to_run(tmp_path):
    proc = subprocess.run([AIACC_BUILD, "caffe", "package", "--release", "9.9.9", "--dist", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode != 0
    assert "aiacc-build caffe library --release 9.9.9" in proc.stderr


def test_the_published_patches_apply_in_order_to_the_verified_tree(caffe_source, tmp_path):
    """What the mirror serves (index's publish_patches), applied as the manual says to the checked 99bd997 tree."""
    info = load_release("2.0.0").info
    published = publish_patches(info, tmp_path / "mirror")
    assert [p.name for p in published] == list(info.caffe.patches)
    tree = tmp_path / "caffe"
    shutil.copytree(str(caffe_source), str(tree))
    subprocess.run(["git", "-C", str(tree), "init", "-q"], check=True)
    for patch in published:
        proc = subprocess.run(["git", "-C", str(tree), "apply", "--whitespace=nowarn", str(patch)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        assert proc.returncode == 0, "{} does not apply: {}".format(patch.name, proc.stderr)
    assert (tree / "src" / "caffe" / "perseus.cpp").is_file()
    assert (tree / "src" / "caffe" / "layers" / "cudnn_batch_norm_layer.cu").is_file()
    assert "scale_jitter_min" in (tree / "src" / "caffe" / "proto" / "caffe.proto").read_text()
