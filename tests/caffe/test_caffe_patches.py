"""The patches apply with `git apply` to the checked BVLC Caffe 99bd997 tree: 1 alone (enough for distributed
training), and 1, 2, 3 in order, each with the Debian bookworm compatibility patch."""

import shutil
import subprocess
from pathlib import Path

import pytest

from caffe_helpers import PATCHES

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

SERIES = sorted((PATCHES / "bvlc_caffe").glob("[1-9]_*.patch"))
COMPAT = PATCHES / "compat_debian_bookworm.patch"


def git(tree: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(tree), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)


@pytest.fixture()
def tree(caffe_source, tmp_path):
    copy = tmp_path / "caffe"
    shutil.copytree(str(caffe_source), str(copy))
    assert git(copy, "init", "-q").returncode == 0
    return copy


def apply(tree: Path, patch: Path) -> None:
    proc = git(tree, "apply", "--whitespace=nowarn", str(patch))
    assert proc.returncode == 0, "{} does not apply: {}".format(patch.name, proc.stderr)


def test_the_manuals_three_patches_are_there():
    assert [p.name for p in SERIES] == ["1_perseus_distribute_train.patch", "2_cudnn_batchnorm.patch",
                                        "3_data_augmentation.patch"]


def test_patch_1_alone_applies(tree):
    apply(tree, SERIES[0])
    apply(tree, COMPAT)
    assert (tree / "src" / "caffe" / "perseus.cpp").is_file()
    assert "USE_PERSEUS" in (tree / "CMakeLists.txt").read_text()
    assert "PerseusSync<float> sync" in (tree / "tools" / "caffe.cpp").read_text()
    # the cuDNN layer and the augmentation are not in patch 1
    assert not (tree / "src" / "caffe" / "layers" / "cudnn_batch_norm_layer.cu").exists()
    assert "scale_jitter_min" not in (tree / "src" / "caffe" / "proto" / "caffe.proto").read_text()


def test_patches_1_2_3_apply_in_order(tree):
    for patch in SERIES:
        apply(tree, patch)
    apply(tree, COMPAT)
    proto = (tree / "src" / "caffe" / "proto" / "caffe.proto").read_text()
    assert "scale_jitter_min" in proto and "CUDNN = 2;" in proto
    assert (tree / "src" / "caffe" / "layers" / "cudnn_batch_norm_layer.cu").is_file()
    assert "CV_LOAD_IMAGE" not in (tree / "src" / "caffe" / "util" / "io.cpp").read_text()


def test_compat_patch_applies_to_the_bare_tree(tree):
    """The compatibility patch touches none of the manual's files: it applies before, after or without them."""
    apply(tree, COMPAT)
    for patch in SERIES:
        apply(tree, patch)


def test_a_patch_applied_twice_is_refused(tree):
    apply(tree, SERIES[0])
    again = git(tree, "apply", "--check", str(SERIES[0]))
    assert again.returncode != 0
    assert "already exists" in again.stderr or "does not apply" in again.stderr
