"""The install script's detection and decision (aiacc_installer), function by function (it also runs whole in test_install_script)."""

from __future__ import annotations

import pytest
from aiacc_installer import decide, detect
from aiacc_installer.table import Cell

from aiacc_build.render.install_script import table_line
from render.sample_releases import modern_cells


@pytest.fixture(scope="module")
def table():
    return [Cell(table_line(c)) for c in modern_cells()]


def test_cuda_from_local_version_label():
    assert detect.cuda_from_label("cu118") == "11.8"
    assert detect.cuda_from_label("cu130") == "13.0"
    assert detect.cuda_from_label("cu92") == "9.2"
    assert detect.cuda_from_label("cpu") == "cpu"
    assert detect.cuda_from_label("rocm6.2") is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False)])", "cpu"),
        ("build_info = collections.OrderedDict([('cuda_version', '12.5.1'), ('cudnn_version', '9'), ('is_cuda_build', True)])", "12.5"),
        ("build_info = {'cuda_version': '11.8', 'is_cuda_build': True}", "11.8"),
        ("build_info['cuda_version'] = '11.0'\nbuild_info['is_cuda_build'] = True", "11.0"),
        ("is_cuda_build = True\ncuda_version_number = '10.0'\ncudnn_version_number = '7'", "10.0"),
        ("nothing useful", None),
    ],
)
def test_tensorflow_build_info_of_every_era(text, expected):
    assert detect.cuda_from_build_info(text) == expected


def test_driver_version_and_its_cuda():
    text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    assert detect.driver_from_proc(text) == "535.104.05"
    arm = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build\n"
    assert detect.driver_from_proc(arm) == "580.65.06"
    assert detect.cuda_for_driver("535.104.05") == "12.2"
    assert detect.cuda_for_driver("580.65.06") == "13.0"
    assert detect.cuda_for_driver("450.36.06") == "11.0"
    assert detect.cuda_for_driver("390.1") is None


def test_exact_match(table):
    cell, how = decide.decide(table, "torch", "2.13.0+cu130", "13.0", "3.11", "aarch64", None, None)
    assert cell.path.endswith("cp311-cp311-manylinux_2_28_aarch64.whl") and how is None
    assert decide.decide(table, "torch", "2.13.0", "12.4", "3.11", "x86_64", None, None) == (None, None)


def test_unknown_framework_cuda_falls_back_to_driver_then_nvcc(table):
    by_driver, how = decide.decide(table, "torch", "2.13.0", None, "3.11", "x86_64", "13.1", "12.4")
    assert by_driver.accel == "13.0" and "driver" in how
    too_old, _ = decide.decide(table, "torch", "2.13.0", None, "3.11", "x86_64", "12.2", None)
    assert too_old is None
    by_nvcc, how = decide.decide(table, "torch", "2.13.0", None, "3.11", "x86_64", None, "13.0")
    assert by_nvcc.accel == "13.0" and "nvcc" in how


def test_python_independent_cells_fit_any_python(table):
    cell, _ = decide.decide(table, "tensorflow", "2.21.0", "cpu", "3.13", "x86_64", None, None)
    assert cell.python == "any"


def test_nearest_names_only_what_the_mirror_publishes(table):
    everything = decide.nearest(table, "torch", "2.13.0", "cpu", "3.10", "x86_64")
    assert len(everything) == 5
    published = {everything[-1].path, everything[-2].path}
    only = decide.nearest(table, "torch", "2.13.0", "cpu", "3.10", "x86_64", published)
    assert [c.path for c in only] == [everything[-2].path, everything[-1].path]  # in the same order
    assert decide.nearest(table, "torch", "2.13.0", "cpu", "3.10", "x86_64", set()) == []
