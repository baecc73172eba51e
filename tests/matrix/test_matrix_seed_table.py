"""Golden: the loaded 1.5.0 matrix is section 2.0 of the 1.5.0 manual, exactly."""

from __future__ import annotations

from collections import defaultdict

import pytest

from aiacc_build.matrix import load_release, select_cells

# Section 2.0 of the 1.5.0 manual, as printed (CUDA -> framework -> versions).
SEED_TABLE = {
    "10.0": {"torch": {"1.2.0", "1.3.0"}, "tensorflow": {"1.14.0", "1.15.0", "2.0.0"}, "mxnet": {"1.4.1", "1.5.0", "1.7.0"}},
    "10.1": {"torch": {"1.6.0", "1.5.1", "1.4.0"}, "tensorflow": {"2.1.0", "2.2.0", "2.3.0"},
             "mxnet": {"1.4.1", "1.5.0", "1.6.0", "1.7.0", "1.9.0"}},
    "10.2": {"torch": {"1.5.1", "1.6.0", "1.8.0", "1.8.2", "1.9.0", "1.10.0"}, "mxnet": {"1.9.0"}},
    "11.0": {"torch": {"1.7.0", "1.7.1"}, "tensorflow": {"2.4.0"}, "mxnet": {"1.9.0"}},
}

# PyTorch's own Python support within 3.6-3.9 (PyPI files of each release; 1.8.2 LTS per its index).
TORCH_PYTHONS = {
    "1.2.0": ("3.6", "3.7"), "1.3.0": ("3.6", "3.7"), "1.4.0": ("3.6", "3.7", "3.8"),
    "1.5.1": ("3.6", "3.7", "3.8"), "1.6.0": ("3.6", "3.7", "3.8"), "1.7.0": ("3.6", "3.7", "3.8"),
    "1.7.1": ("3.6", "3.7", "3.8", "3.9"), "1.8.0": ("3.6", "3.7", "3.8", "3.9"), "1.8.2": ("3.6", "3.7", "3.8", "3.9"),
    "1.9.0": ("3.6", "3.7", "3.8", "3.9"), "1.10.0": ("3.6", "3.7", "3.8", "3.9"),
}


@pytest.fixture(scope="module")
def seed():
    return load_release("1.5.0")


def test_framework_versions_per_cuda_are_the_seed_table(seed):
    table: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for cell in seed.cells:
        table[cell.cuda][cell.framework.value].add(cell.framework_version)
    assert {cuda: dict(fws) for cuda, fws in table.items()} == SEED_TABLE


def test_no_cpu_cells_and_x86_64_only(seed):
    assert all(c.cuda is not None for c in seed.cells)
    assert {c.arch.value for c in seed.cells} == {"x86_64"}


def test_tensorflow_and_mxnet_only_python_36(seed):
    for cell in seed.cells:
        if cell.framework.value != "torch":
            assert cell.python is None and cell.env_pythons == ("3.6",), cell.key


def test_torch_pythons_follow_pytorch(seed):
    for cuda, fws in SEED_TABLE.items():
        for version in fws.get("torch", ()):
            cells = select_cells(seed.cells, framework="torch", framework_version=version, cuda=cuda)
            assert tuple(c.python for c in cells) == TORCH_PYTHONS[version], (version, cuda)


def test_cell_counts(seed):
    counts = defaultdict(int)
    for c in seed.cells:
        counts[c.framework.value] += 1
    assert dict(counts) == {"torch": 42, "tensorflow": 7, "mxnet": 10}


@pytest.mark.parametrize(
    ("version", "cuda", "requirement", "index_url", "variant"),
    [
        ("1.7.1", "11.0", "torch==1.7.1+cu110", "https://download.pytorch.org/whl/cu110", "cu110"),
        ("1.7.0", "11.0", "torch==1.7.0+cu110", "https://download.pytorch.org/whl/cu110", "cu110"),
        ("1.6.0", "10.2", "torch==1.6.0", None, None),  # PyPI's default 1.6.0 is the CUDA 10.2 build
        ("1.6.0", "10.1", "torch==1.6.0+cu101", "https://download.pytorch.org/whl/cu101", "cu101"),
        ("1.3.0", "10.0", "torch==1.3.0+cu100", "https://download.pytorch.org/whl/cu100", "cu100"),
        ("1.2.0", "10.0", "torch==1.2.0", None, None),
        ("1.8.2", "10.2", "torch==1.8.2+cu102", "https://download.pytorch.org/whl/lts/1.8/cu102", "cu102"),
    ],
)
def test_torch_framework_builds(seed, version, cuda, requirement, index_url, variant):
    for cell in select_cells(seed.cells, framework="torch", framework_version=version, cuda=cuda):
        assert cell.build.requirement == requirement
        assert cell.build.index_url == index_url
        assert cell.build.cuda_variant == variant
        assert cell.build.cxx11_abi is False  # pip torch 1.x: pre-cxx11 ABI


def test_independent_framework_builds(seed):
    (tf114,) = select_cells(seed.cells, framework="tensorflow", framework_version="1.14.0")
    assert tf114.build.requirement == "tensorflow-gpu==1.14.0"
    (mx16,) = select_cells(seed.cells, framework="mxnet", framework_version="1.6.0")
    assert mx16.build.requirement == "mxnet-cu101==1.6.0.post0"  # 1.6.0's CUDA builds were published as .post0
    (mx19,) = select_cells(seed.cells, framework="mxnet", framework_version="1.9.0", cuda="11.0")
    assert mx19.build.requirement == "mxnet-cu110==1.9.0"


def test_release_naming_data(seed):
    info = seed.info
    assert info.docker_os_types == ("centos7", "ubuntu1804")
    assert info.wheel_tags.independent_python_tag == "py2.py3"
    assert info.cibuildwheel.startswith("2.")  # cibuildwheel 3+ cannot build cp36
    assert seed.source.name == "1.5.0.yaml"
