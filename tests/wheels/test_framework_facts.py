"""The CUDA toolkit and C++ ABI a framework file was built with, read from the file, and the planner's use of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from wheels_testkit import LOCAL_TORCH_FILE, torch_cell, torch_wheel

from aiacc_build.adapters.base import interface_digest
from aiacc_build.adapters.torch import TORCH_INTERFACE_PREFIXES, parse_torch_facts
from aiacc_build.wheels.framework_facts import (
    FactsError,
    FrameworkFacts,
    facts_of_installed,
    facts_problem,
    read_facts,
)
from aiacc_build.wheels.frameworks import FrameworkArtifact
from aiacc_build.registry import RegistryClient
from aiacc_build.wheels.plan import CellStatus, plan_cell
from aiacc_build.wheels.toolchain import find_interpreter
from aiacc_build.model import Framework

# The exact texts of torch 1.8.0's (CUDA 10.2, pre-cxx11) and 2.13.0+cpu's files.
OLD_VERSION_PY = "__version__ = '1.8.0'\ndebug = False\ncuda = '10.2'\ngit_version = 'abc'\nhip = None\n"
OLD_CONFIG = (
    "# When we build libtorch with the old GCC ABI, dependent libraries must too.\n"
    'if(CMAKE_SYSTEM_NAME STREQUAL "Linux")\n  set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")\nendif()\n'
)
NEW_VERSION_PY = "__version__ = '2.13.0+cpu'\ndebug = False\ncuda: Optional[str] = None\nxpu: Optional[str] = None\n"


def test_parse_old_and_new_formats():
    assert parse_torch_facts(OLD_VERSION_PY, OLD_CONFIG) == FrameworkFacts(cuda="10.2", cxx11_abi=False)
    assert parse_torch_facts(NEW_VERSION_PY, "set(TORCH_FOUND TRUE)") == FrameworkFacts(cuda=None, cxx11_abi=True)
    assert parse_torch_facts("cuda: Optional[str] = '13.0.2'\n", None).cuda == "13.0"  # major.minor
    with pytest.raises(FactsError, match="no `cuda = ...` line"):
        parse_torch_facts("__version__ = '2.0'\n", None)


@pytest.mark.skipif(not Path(LOCAL_TORCH_FILE).is_file(), reason="torch 2.13.0+cpu not on this disk")
def test_the_local_torch_file_is_a_cxx11_cpu_build(tmp_path):
    artifact = FrameworkArtifact("torch", "2.13.0+cpu", Path(LOCAL_TORCH_FILE).name, LOCAL_TORCH_FILE, 1, None, "local")
    facts = read_facts(Framework("torch"), artifact, tmp_path, offline=True)
    assert isinstance(facts, FrameworkFacts) and (facts.cuda, facts.cxx11_abi) == (None, True)
    assert facts.interface is not None and len(facts.interface) == 64  # its RECORD lists the headers
    assert facts_problem(torch_cell("2.13.0", None, "3.11"), facts, artifact.filename) is None


def test_the_interface_is_the_headers_and_cmake_files_whatever_the_python(tmp_path):
    """Builds of one torch for two Pythons differ in their extension modules, not in their C++ interface."""
    headers = {"torch/include/ATen/Tensor.h": b"struct Tensor {};\n", "torch/include/c10/macros.h": b"#define X 1\n"}

    def facts_of(name: str, **changed: bytes) -> FrameworkFacts:
        files = {**headers, f"torch/_C.{name}.so": name.encode(), **changed}
        wheel = torch_wheel(tmp_path / f"torch-2.6.0-{name}-{name}-linux_x86_64.whl", cuda="12.4", files=files)
        artifact = FrameworkArtifact("torch", "2.6.0", wheel.name, str(wheel), 1, None, "local")
        facts = read_facts(Framework("torch"), artifact, tmp_path, offline=True)
        assert isinstance(facts, FrameworkFacts)
        return facts

    cp39, cp312 = facts_of("cp39"), facts_of("cp312")
    assert cp39.interface is not None and cp39 == cp312
    assert facts_of("cp313", **{"torch/include/c10/macros.h": b"#define X 2\n"}).interface != cp39.interface
    assert facts_of("cp310", **{"torch/include/extra.h": b"\n"}).interface != cp39.interface
    assert interface_digest("torch/_C.so,sha256=abc,1\n", TORCH_INTERFACE_PREFIXES) is None  # no header listed: unknown


def test_mismatches_are_named():
    cpu_cell = torch_cell("2.13.0", None, "3.11")
    problem = facts_problem(cpu_cell, FrameworkFacts(cuda="12.8", cxx11_abi=True), "t.whl")
    assert problem == "framework file t.whl is a CUDA 12.8 build, the cell declares a CPU build"
    cuda_cell = torch_cell("2.13.0", "13.0", "3.11", variant=None)
    assert "is a CUDA 12.8 build, the cell declares CUDA 13.0" in facts_problem(
        cuda_cell, FrameworkFacts(cuda="12.8", cxx11_abi=True), "t.whl"
    )
    old_cell = torch_cell("2.13.0", "13.0", "3.11", variant=None, cxx11_abi=False)
    assert "uses the cxx11 C++ ABI, the cell declares pre-cxx11" in facts_problem(
        old_cell, FrameworkFacts(cuda="13.0", cxx11_abi=True), "t.whl"
    )


@pytest.fixture
def native(tmp_path) -> Path:
    (tmp_path / "native" / "bindings" / "torch").mkdir(parents=True)
    (tmp_path / "native" / "bindings" / "torch" / "pyproject.toml").write_text("[project]\nname='perseus_torch'\n")
    return tmp_path / "native"


needs_311 = pytest.mark.skipif(find_interpreter("3.11") is None, reason="no Python 3.11 here")


@needs_311
def test_planner_defers_a_file_of_another_toolkit(native, tmp_path):
    """An exact pin whose file was compiled for CUDA 12.8 is never built as the CPU cell it claims to be."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    torch_wheel(folder / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", cuda="12.8")
    client = RegistryClient(tmp_path / "registry", offline=True)
    plan = plan_cell(torch_cell("2.13.0", None, "3.11"), None, client, native, local_dirs=[folder], index_dirs=[])
    assert plan.status is CellStatus.DEFERRED and not plan.buildable_here
    assert "is a CUDA 12.8 build, the cell declares a CPU build" in plan.reason
    assert plan.facts == FrameworkFacts(cuda="12.8", cxx11_abi=True)


@needs_311
def test_planner_defers_a_file_of_another_abi_and_accepts_the_right_one(native, tmp_path):
    folder = tmp_path / "wheels"
    folder.mkdir()
    wheel = torch_wheel(folder / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", cuda=None)
    client = RegistryClient(tmp_path / "registry", offline=True)
    old_cell = torch_cell("2.13.0", None, "3.11", cxx11_abi=False)
    plan = plan_cell(old_cell, None, client, native, local_dirs=[folder], index_dirs=[])
    assert plan.status is CellStatus.DEFERRED and "uses the cxx11 C++ ABI, the cell declares pre-cxx11" in plan.reason
    torch_wheel(wheel, cuda=None, abi_flag="0")
    plan = plan_cell(old_cell, None, client, native, local_dirs=[folder], index_dirs=[])
    assert plan.status is CellStatus.BUILD, plan.reason
    assert plan.facts == FrameworkFacts(cuda=None, cxx11_abi=False)


@needs_311
def test_unreadable_local_file_is_deferred(native, tmp_path):
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"not a zip")
    client = RegistryClient(tmp_path / "registry", offline=True)
    plan = plan_cell(torch_cell("2.13.0", None, "3.11"), None, client, native, local_dirs=[folder], index_dirs=[])
    assert plan.status is CellStatus.DEFERRED and "unreadable" in plan.reason


def test_installed_framework_facts(tmp_path):
    site = tmp_path / "site-packages"
    (site / "torch" / "share" / "cmake" / "Torch").mkdir(parents=True)
    (site / "torch" / "version.py").write_text(OLD_VERSION_PY)
    (site / "torch" / "share" / "cmake" / "Torch" / "TorchConfig.cmake").write_text(OLD_CONFIG)
    assert facts_of_installed(Framework("torch"), site) == FrameworkFacts(cuda="10.2", cxx11_abi=False)
    assert facts_of_installed(Framework("mxnet"), site) is None  # no reader: the planner's other checks hold
    with pytest.raises(FactsError, match="no torch installed"):
        facts_of_installed(Framework("torch"), tmp_path)


def test_registry_file_is_read_by_ranges_and_kept(tmp_path):
    """torch 1.8.0 for CPython 3.7 on the registry: 10.2 and pre-cxx11, read without downloading 700 MB."""
    client = RegistryClient(tmp_path / "registry")
    files = client.files("torch", None)
    if isinstance(files, str):
        pytest.skip(f"registry not reachable here: {files}")
    name = "torch-1.8.0-cp37-cp37m-manylinux1_x86_64.whl"
    (found,) = [f for f in files if f.filename == name]
    artifact = FrameworkArtifact("torch", "1.8.0", name, found.url, found.size, found.sha256, "registry")
    facts = read_facts(Framework("torch"), artifact, tmp_path / "registry", offline=False)
    assert isinstance(facts, FrameworkFacts) and (facts.cuda, facts.cxx11_abi) == ("10.2", False)
    assert facts.interface is not None  # its RECORD, read by ranges too
    # kept: offline, the same question gets the same answer; an unknown file gets a reason, not a guess
    assert read_facts(Framework("torch"), artifact, tmp_path / "registry", offline=True) == facts
    other = FrameworkArtifact("torch", "1.9.0", "torch-1.9.0-x.whl", found.url + "?x", 1, "00" * 32, "registry")
    assert read_facts(Framework("torch"), other, tmp_path / "registry", offline=True) == (
        "offline, and the file was never inspected"
    )
