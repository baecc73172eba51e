"""Golden tests: the seed documents' exact names, computed by the one naming module."""

from __future__ import annotations

import pytest

from aiacc_build import naming
from aiacc_build.matrix import load_release, select_cells
from aiacc_build.model import Arch, Cell, CellGroup, Framework, FrameworkBuild, group_cells

SEED = load_release("1.5.0")
SEED_RELEASE = SEED.info  # the 1.5.0 naming data, loaded from matrix/releases/1.5.0.yaml


def seed_cell(framework: str, version: str, cuda: str, python: str | None = None) -> Cell:
    """The one cell of the loaded 1.5.0 matrix (fails if the matrix lacks it)."""
    found = select_cells(SEED.cells, framework=framework, framework_version=version, cuda=cuda)
    if python is not None:
        found = [c for c in found if c.python == python]
    assert len(found) == 1, f"1.5.0 matrix has {len(found)} cells for {framework} {version} cuda {cuda} py {python}"
    return found[0]


def torch_cell(version: str, cuda: str | None, python: str) -> Cell:
    """A hypothetical torch cell under the 1.5.0 naming data (for names outside the seed table)."""
    return Cell(
        release=SEED_RELEASE,
        release_version="1.5.0",
        framework=Framework("torch"),
        framework_version=version,
        cuda=cuda,
        python=python,
        arch=Arch.X86_64,
        env_pythons=(python,),
        build=FrameworkBuild(requirement=f"torch=={version}", index_url=None, cuda_variant=None, cxx11_abi=False),
    )


def test_seed_torch_wheel_path_and_url():
    cell = seed_cell("torch", "1.7.1", "11.0", "3.6")
    assert naming.wheel_path(cell) == "cuda110/perseus_torch-1.5.0+1.7.1-cp36-cp36m-linux_x86_64.whl"
    assert naming.wheel_url(cell) == (
        "https://ali-perseus-release.oss-cn-huhehaote.aliyuncs.com/cuda110/"
        "perseus_torch-1.5.0%2B1.7.1-cp36-cp36m-linux_x86_64.whl"
    )


def test_cp38_has_no_m_abi_flag():
    assert naming.wheel_filename(seed_cell("torch", "1.8.0", "10.2", "3.8")) == "perseus_torch-1.5.0+1.8.0-cp38-cp38-linux_x86_64.whl"
    assert naming.wheel_filename(seed_cell("torch", "1.8.0", "10.2", "3.7")) == "perseus_torch-1.5.0+1.8.0-cp37-cp37m-linux_x86_64.whl"


def test_python_independent_wheel():
    cell = seed_cell("tensorflow", "1.15.0", "10.0")
    assert naming.wheel_filename(cell) == "perseus_tensorflow-1.5.0+1.15.0-py2.py3-none-manylinux1_x86_64.whl"
    assert naming.repaired_wheel_filename(cell) == "perseus_tensorflow-1.5.0+1.15.0-py2.py3-none-manylinux2014_x86_64.whl"


def test_same_filename_in_two_folders_keyed_by_path():
    a, b = seed_cell("torch", "1.6.0", "10.1", "3.6"), seed_cell("torch", "1.6.0", "10.2", "3.6")
    assert naming.wheel_filename(a) == naming.wheel_filename(b)
    assert naming.wheel_path(a) != naming.wheel_path(b)


def test_conda_and_docker_names():
    cell = seed_cell("torch", "1.7.1", "11.0", "3.6")
    assert naming.conda_filename(cell, "3.6") == "torch_1.7.1_cuda11.0_py36.yaml"
    assert naming.docker_image_ref(cell, "centos7", "3.6") == "perseus-training:centos7-cu11.0-pt1.7.1-py36-latest"
    tf = seed_cell("tensorflow", "2.4.0", "11.0")
    assert naming.docker_image_ref(tf, "centos7", "3.6") == "perseus-training:centos7-cu11.0-tf2.4.0-py36-latest"
    mx = seed_cell("mxnet", "1.7.0", "10.0")
    assert naming.docker_tag(mx, "ubuntu1804", "3.6") == "ubuntu1804-cu10.0-mx1.7.0-py36-latest"


def test_cpu_cell_names_and_public_version_only():
    cell = torch_cell("2.13.0", None, "3.11")
    assert naming.wheel_path(cell) == "cpu/perseus_torch-1.5.0+2.13.0-cp311-cp311-linux_x86_64.whl"
    assert naming.conda_filename(cell, "3.11") == "torch_2.13.0_cpu_py311.yaml"
    assert naming.docker_tag(cell, "debian12", "3.11") == "debian12-cpu-pt2.13.0-py311-latest"
    with pytest.raises(ValueError, match="public version"):
        naming.wheel_version(torch_cell("2.13.0+cpu", None, "3.11"))


def test_ci_job_and_cibuildwheel_selector():
    cells = select_cells(SEED.cells, framework="torch", framework_version="1.8.0", cuda="10.2")
    (group,) = group_cells(cells)
    assert isinstance(group, CellGroup)
    assert naming.ci_job_id(group) == "torch-1_8_0-cuda102-x86_64"
    assert naming.cibw_build_selector(group) == "cp36-manylinux_x86_64 cp37-manylinux_x86_64 cp38-manylinux_x86_64 cp39-manylinux_x86_64"


def test_environment_python_must_belong_to_cell():
    with pytest.raises(ValueError, match="no environment for Python 3.7"):
        naming.conda_filename(seed_cell("torch", "1.7.1", "11.0", "3.6"), "3.7")
