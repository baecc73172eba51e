"""Planning: exact framework builds, the default 'on this disk' selection, and the reasons for deferral."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from packaging.version import Version
from wheels_testkit import LOCAL_CELL, LOCAL_TORCH_FILE, RELEASE, torch_cell, torch_wheel

from aiacc_build.wheels.frameworks import find_local, pinned, wheel_fits
from aiacc_build.registry import RegistryClient
from aiacc_build.wheels.plan import CellStatus, missing_nvcc_reason, plan_cell, plan_cells
from aiacc_build.wheels.toolchain import cuda_compilers, find_cuda_compiler, find_interpreter
from aiacc_build.toolkits import installed, toolkits_dir
from aiacc_build.model import Arch, Cell, Framework, FrameworkBuild

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

needs_local_torch = pytest.mark.skipif(not Path(LOCAL_TORCH_FILE).is_file(), reason="torch 2.13.0+cpu not on this disk")


@pytest.fixture
def native(tmp_path) -> Path:
    """A native/ tree with a torch binding project (planning only looks for its pyproject.toml)."""
    (tmp_path / "native" / "bindings" / "torch").mkdir(parents=True)
    (tmp_path / "native" / "bindings" / "torch" / "pyproject.toml").write_text("[project]\nname='perseus_torch'\n")
    return tmp_path / "native"


@pytest.fixture
def offline(tmp_path) -> RegistryClient:
    return RegistryClient(tmp_path / "registry", offline=True)


def test_exact_version_match_includes_the_local_label():
    v = Version("1.6.0+cu101")
    assert wheel_fits("torch-1.6.0+cu101-cp37-cp37m-linux_x86_64.whl", "torch", v, "3.7", "x86_64")
    # the registry's unlabelled 1.6.0 is a CUDA 10.2 build: never taken for a cu101 cell
    assert not wheel_fits("torch-1.6.0-cp37-cp37m-manylinux1_x86_64.whl", "torch", v, "3.7", "x86_64")
    assert not wheel_fits("torch-1.6.0+cu102-cp37-cp37m-linux_x86_64.whl", "torch", v, "3.7", "x86_64")
    # ... and the other way round: an unlabelled pin does not take a labelled local file
    assert not wheel_fits(
        "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", "torch", Version("2.13.0"), "3.11", "x86_64"
    )


def test_wheel_fits_checks_python_abi_and_platform():
    v = Version("1.7.1")
    assert wheel_fits("torch-1.7.1-cp36-cp36m-manylinux1_x86_64.whl", "torch", v, "3.6", "x86_64")
    assert not wheel_fits("torch-1.7.1-cp36-cp36m-manylinux1_x86_64.whl", "torch", v, "3.7", "x86_64")
    assert not wheel_fits("torch-1.7.1-cp36-cp36m-win_amd64.whl", "torch", v, "3.6", "x86_64")
    assert not wheel_fits("torch-1.7.1-cp36-cp36m-manylinux2014_aarch64.whl", "torch", v, "3.6", "x86_64")
    assert wheel_fits("mxnet-1.9.1-py3-none-manylinux2014_x86_64.whl", "mxnet", Version("1.9.1"), "3.9", "x86_64")
    assert wheel_fits("x-1.0-cp37-abi3-manylinux_2_28_x86_64.whl", "x", Version("1.0"), "3.11", "x86_64")


def test_only_exact_pins_are_accepted():
    assert pinned(FrameworkBuild("torch==2.13.0+cpu", None, "cpu", True)) == ("torch", Version("2.13.0+cpu"))
    for loose in ("torch>=2.13", "torch==2.13.*", "torch", "torch==2.13.0,<3"):
        with pytest.raises(ValueError, match="not an exact pin"):
            pinned(FrameworkBuild(loose, None, None, None))


@needs_local_torch
def test_local_cell_is_built_by_default(native, offline):
    plan = plan_cell(LOCAL_CELL, None, offline, native)
    assert plan.status is CellStatus.BUILD, plan.reason
    assert plan.framework is not None and plan.framework.location == LOCAL_TORCH_FILE
    assert plan.framework.version == "2.13.0+cpu"
    assert plan.download_size == 0
    assert plan.interpreter is not None and plan.interpreter.python == "3.11"


@needs_local_torch
def test_local_files_are_found_through_pip_find_links(tmp_path):
    assert find_local(LOCAL_CELL.build, "3.11", "x86_64") is not None
    assert find_local(LOCAL_CELL.build, "3.11", "x86_64", dirs=[tmp_path]) is None
    assert find_local(LOCAL_CELL.build, "3.12", "x86_64") is None


def test_binding_missing_defers(tmp_path, offline):
    plan = plan_cell(LOCAL_CELL, None, offline, tmp_path / "native")
    assert plan.status is CellStatus.DEFERRED and "no torch binding" in plan.reason


def test_cuda_cell_without_its_nvcc_is_deferred_to_a_builder_image(native, offline):
    plan = plan_cell(torch_cell("1.7.1", "11.0", "3.8", variant="cu110"), None, offline, native)
    assert plan.status is CellStatus.DEFERRED
    assert "needs nvcc 11.0" in plan.reason and "perseus-builder:" in plan.reason
    assert not plan.buildable_here


@pytest.fixture
def no_provisioned_toolkits(tmp_path, monkeypatch):
    """An empty toolkits folder: only /usr/local's nvcc count (the probe is cached per process)."""
    monkeypatch.setenv("AIACC_TOOLKITS_DIR", str(tmp_path / "toolkits"))
    cuda_compilers.cache_clear()
    yield
    cuda_compilers.cache_clear()


def test_cuda_cell_of_a_provisionable_toolkit_names_the_fetch(native, offline, no_provisioned_toolkits):
    if find_cuda_compiler("12.4") is not None:
        pytest.skip("this machine has nvcc 12.4 under /usr/local")
    cell = torch_cell("2.6.0", "12.4", "3.9", variant=None, cxx11_abi=False)
    plan = plan_cell(cell, True, offline, native)
    assert plan.status is CellStatus.DEFERRED and not plan.buildable_here
    assert plan.reason == "needs nvcc 12.4: run `aiacc-build toolkit fetch 12.4` (~1 GB)"
    # only where the recipe's packages run: an aarch64 cell still needs its builder image
    arm = dataclasses.replace(cell, arch=Arch.AARCH64)
    assert "perseus-builder:" in missing_nvcc_reason(arm) and "toolkit fetch" not in missing_nvcc_reason(arm)


def test_provisioned_toolkit_makes_its_cells_plannable(native, offline):
    if installed(toolkits_dir() / "cuda-12.4") is None:
        pytest.skip("no provisioned CUDA 12.4 here (aiacc-build toolkit fetch 12.4)")
    cuda_compilers.cache_clear()
    plan = plan_cell(torch_cell("2.6.0", "12.4", "3.9", variant=None, cxx11_abi=False), True, offline, native)
    assert plan.cuda_compiler is not None and plan.cuda_compiler.version.startswith("12.4.")
    assert plan.cuda_compiler.max_host_gcc is not None  # the build passes its C++ compiler to nvcc
    assert "needs nvcc" not in plan.reason


def test_missing_interpreter_is_named(native, offline):
    if find_interpreter("3.5") is not None:
        pytest.skip("this machine has Python 3.5")
    plan = plan_cell(torch_cell("1.4.0", None, "3.5"), None, offline, native)
    assert plan.status is CellStatus.DEFERRED and "no Python 3.5 interpreter" in plan.reason


def test_framework_that_is_nowhere_is_deferred_with_the_registry_answer(native, offline):
    plan = plan_cell(torch_cell("2.13.0", None, "3.12"), None, offline, native)
    assert plan.status is CellStatus.DEFERRED
    assert "torch==2.13.0+cpu" in plan.reason and "offline" in plan.reason


def test_inconsistent_cuda_variant_is_refused(native, offline, tmp_path):
    # a CPU cell whose pin names a cu-labelled build: the file exists, the cell must still not build
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / "torch-2.13.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    cell = torch_cell("2.13.0", None, "3.11", requirement="torch==2.13.0+cu130", variant="cpu")
    plan = plan_cell(cell, None, offline, native, local_dirs=[folder])
    assert plan.status is CellStatus.DEFERRED and "'cu130'" in plan.reason and "'cpu'" in plan.reason


def test_python_independent_binding_without_sources_is_deferred(native, offline):
    tf = Cell(
        release=RELEASE,
        release_version="2.0.0",
        framework=Framework("tensorflow"),
        framework_version="2.21.0",
        cuda=None,
        python=None,
        arch=Arch.X86_64,
        env_pythons=("3.11",),
        build=FrameworkBuild("tensorflow-cpu==2.21.0", None, "cpu", None),
    )
    plan = plan_cell(tf, None, offline, native)
    assert plan.status is CellStatus.DEFERRED and "no tensorflow binding" in plan.reason


@needs_local_torch
def test_selection_replaces_the_default(native, offline):
    other = torch_cell("2.13.0", None, "3.12")
    plan = plan_cells("2.0.0", [LOCAL_CELL, other], offline, selected_keys={other.key}, native_dir=native)
    statuses = {p.cell.key: (p.status, p.reason) for p in plan.cells}
    assert statuses[LOCAL_CELL.key] == (CellStatus.DEFERRED, "not selected")
    assert statuses[other.key][0] is CellStatus.DEFERRED  # selected, but its framework exists nowhere here
    default = plan_cells("2.0.0", [LOCAL_CELL, other], offline, native_dir=native)
    assert [p.cell.key for p in default.to_build] == [LOCAL_CELL.key]


def test_registry_sizes_a_deferred_cell_and_keeps_the_answer(native, tmp_path):
    client = RegistryClient(tmp_path / "registry")
    files = client.files("torch", None)
    if isinstance(files, str):
        pytest.skip(f"registry not reachable here: {files}")
    cell = torch_cell("2.13.0", "13.0", "3.12", variant=None)
    if find_interpreter("3.12") is None:
        pytest.skip("no Python 3.12 here")
    plan = plan_cell(cell, None, client, native)
    if plan.cuda_compiler is None:
        assert "needs nvcc 13.0" in plan.reason
        return
    assert plan.status is CellStatus.DEFERRED and plan.buildable_here
    assert (
        plan.framework is not None and plan.framework.filename == "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    )
    assert plan.download_size and plan.download_size > 100 * 2**20
    assert "build it with `aiacc-build build --release 2.0.0 --cells torch-2.13.0/cuda13.0/py3.12/x86_64`" in plan.reason
    # kept on disk: the same question offline gets the same answer
    again = plan_cell(cell, None, RegistryClient(tmp_path / "registry", offline=True), native)
    assert again.framework == plan.framework


def test_local_index_is_on_disk_but_not_the_default(native, offline, tmp_path):
    """A file:// index of pip's (like /opt/pypi-more): no download, built only when selected."""
    files, simple = tmp_path / "files", tmp_path / "simple" / "torch"
    files.mkdir()
    simple.mkdir(parents=True)
    name = "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    torch_wheel(files / name, cuda="13.0")
    (simple / "index.html").write_text(f'<a href="../../files/{name}#sha256={"ab" * 32}">{name}</a>')
    cell = torch_cell("2.14.1", "13.0", "3.11", variant=None)
    if find_interpreter("3.11") is None or find_cuda_compiler("13.0") is None:
        pytest.skip("needs Python 3.11 and nvcc 13.0")
    default = plan_cell(cell, None, offline, native, local_dirs=[], index_dirs=[tmp_path / "simple"])
    assert default.status is CellStatus.DEFERRED and default.buildable_here
    assert default.framework is not None and default.framework.source == "local-index"
    assert default.framework.location == str(files / name) and default.framework.sha256 == "ab" * 32
    assert default.download_size == 0 and "in a local index" in default.reason
    chosen = plan_cell(cell, True, offline, native, local_dirs=[], index_dirs=[tmp_path / "simple"])
    assert chosen.status is CellStatus.BUILD
    nowhere = plan_cell(cell, True, offline, native, local_dirs=[], index_dirs=[])
    assert nowhere.status is CellStatus.DEFERRED and "offline" in nowhere.reason


def _tf_cell(version: str, cuda: str | None) -> Cell:
    return Cell(
        release=RELEASE,
        release_version="2.0.0",
        framework=Framework("tensorflow"),
        framework_version=version,
        cuda=cuda,
        python=None,
        arch=Arch.X86_64,
        env_pythons=("3.10", "3.13"),
        build=FrameworkBuild(f"tensorflow{'' if cuda else '-cpu'}=={version}", None, None if cuda else "cpu", None),
    )


def test_default_downloads_the_newest_cpu_cell_of_each_framework_with_nothing_on_disk():
    def planned(cell: Cell, status: CellStatus, buildable: bool):
        from aiacc_build.wheels.plan import CellPlan

        return CellPlan(cell=cell, status=status, reason="r", buildable_here=buildable)

    from aiacc_build.wheels.plan import default_downloads

    plans = [
        planned(LOCAL_CELL, CellStatus.BUILD, True),
        planned(torch_cell("2.13.0", None, "3.12"), CellStatus.DEFERRED, True),  # torch builds already
        planned(_tf_cell("2.20.0", None), CellStatus.DEFERRED, True),
        planned(_tf_cell("2.21.0", "12.5"), CellStatus.DEFERRED, True),  # CUDA: never a default download
        planned(_tf_cell("2.21.0", None), CellStatus.DEFERRED, True),
        planned(_tf_cell("2.14.1", None), CellStatus.DEFERRED, True),
    ]
    assert default_downloads(plans) == [4]
    plans[4] = planned(_tf_cell("2.21.0", None), CellStatus.DEFERRED, False)  # e.g. no interpreter here
    assert default_downloads(plans) == [2]
    plans[0] = planned(LOCAL_CELL, CellStatus.DEFERRED, True)  # no torch file on this disk: its newest CPU cell
    assert default_downloads(plans) == [0, 2]  # a tie of versions: the first in matrix order
