"""The modern 2.0.0 release: derived from upstream facts, with the cell built on this machine."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from aiacc_build import naming
from aiacc_build.matrix import load_all, load_release, select_cells

LOCAL_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")


@pytest.fixture(scope="module")
def modern():
    return load_release("2.0.0")


def test_local_cell_exists(modern):
    (cell,) = select_cells(modern.cells, framework="torch", framework_version="2.13.0", cuda="cpu", python="3.11", arch="x86_64")
    assert cell.build.requirement == "torch==2.13.0+cpu"
    assert cell.build.index_url == "https://download.pytorch.org/whl/cpu"
    assert cell.build.cxx11_abi is True
    assert naming.wheel_path(cell) == "cpu/perseus_torch-2.0.0+2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl"


@pytest.mark.skipif(not LOCAL_WHEEL.is_file(), reason="the local torch 2.13.0+cpu wheel is not on this machine")
def test_local_cell_matches_the_wheel_on_disk(modern):
    name, version, _, tags = parse_wheel_filename(LOCAL_WHEEL.name)
    (cell,) = select_cells(modern.cells, framework=str(name), framework_version=version.public, cuda=version.local, python="3.11", arch="x86_64")
    assert f"{name}=={version}" == cell.build.requirement
    assert any(t.interpreter == f"cp{naming.python_nodot(cell.python)}" for t in tags)


def test_pythons_arches_and_cuda_range(modern):
    for c in modern.cells:
        assert set(c.env_pythons) <= {"3.9", "3.10", "3.11", "3.12", "3.13"}, c.key
        if c.cuda is not None:
            floor = "11.7" if c.framework.value == "mxnet" else "11.8"
            assert Version(floor) <= Version(c.cuda) < Version("14"), c.key
    assert {c.arch.value for c in modern.cells} == {"x86_64", "aarch64"}
    assert any(c.cuda is None for c in modern.cells)


def test_upstream_facts_shape_the_cells(modern):
    # torch 2.15.0 has no cp310 wheel; tensorflow 2.21.0 dropped Python 3.9; TF on aarch64 is CPU-only
    assert not select_cells(modern.cells, framework="torch", framework_version="2.15.0", python="3.10")
    (tf,) = select_cells(modern.cells, framework="tensorflow", framework_version="2.21.0", cuda="12.5")
    assert tf.env_pythons == ("3.10", "3.11", "3.12", "3.13")
    assert tf.build.requirement == "tensorflow[and-cuda]==2.21.0"
    assert not [c for c in select_cells(modern.cells, framework="tensorflow", arch="aarch64") if c.cuda is not None]
    (tf214,) = select_cells(modern.cells, framework="tensorflow", framework_version="2.14.1", cuda="11.8")
    assert tf214.env_pythons == ("3.9", "3.10", "3.11")
    # the registry's torch builds carry the CUDA their Requires-Dist pins
    assert {c.cuda for c in select_cells(modern.cells, framework="torch", framework_version="2.13.0")} == {"13.0", None}
    assert {c.cuda for c in select_cells(modern.cells, framework="torch", framework_version="2.15.0")} == {"13.2", None}


def test_torch_26_is_the_pre_cxx11_cuda_124_line(modern):
    cells = select_cells(modern.cells, framework="torch", framework_version="2.6.0")
    assert sorted(c.python for c in cells) == sorted(["3.9", "3.10", "3.11", "3.12", "3.13"])
    for c in cells:  # its aarch64 build (CPU, cxx11) is excluded with a reason; no +cpu build is recorded
        assert (c.cuda, c.arch.value, c.build.requirement, c.build.cxx11_abi) == ("12.4", "x86_64", "torch==2.6.0", False)
    (py39,) = [c for c in cells if c.python == "3.9"]
    assert naming.wheel_path(py39) == "cuda124/perseus_torch-2.0.0+2.6.0-cp39-cp39-manylinux_2_28_x86_64.whl"


def test_cell_counts(modern):
    assert Counter(c.framework.value for c in modern.cells) == {"torch": 50, "tensorflow": 9, "mxnet": 3}


def test_load_all_is_sorted_and_keys_are_unique():
    releases = load_all()
    assert [r.info.version for r in releases] == ["1.5.0", "2.0.0"]
    keys = [c.key for r in releases for c in r.cells]
    assert len(keys) == len(set(keys))
    paths = [naming.wheel_path(c) for r in releases for c in r.cells]
    assert len(paths) == len(set(paths))
