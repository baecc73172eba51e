"""The GitHub Actions workflow of a release: one cibuildwheel job per cell group whose framework has a
binding (the others are listed in the file's header with their adapter's reason), then an index job.

Each job renders the release (for the builder Dockerfile and bake file), builds its builder image on
the exact manylinux image the pinned cibuildwheel uses, then builds, repairs and tests its wheels.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from .. import naming
from ..adapters import adapter_for
from ..wheels.binding import read_binding_spec
from ..paths import NATIVE_DIR
from ..model import Arch, CellGroup, Cell, ReleaseInfo, group_cells
from . import pip
from .output import RenderedFile
from .templates import render

RUNNERS = {Arch.X86_64: "ubuntu-24.04", Arch.AARCH64: "ubuntu-24.04-arm"}
TOOL_PYTHON = "3.12"  # runs aiacc-build and cibuildwheel on the runner


def binding_dir(group: CellGroup) -> str:
    return adapter_for(group.framework).binding_dir(Path("native")).as_posix()


@dataclass(frozen=True)
class NotBuilt:
    """A cell group that gets no job (no job that must fail): its framework has no binding yet."""

    id: str
    name: str
    reason: str
    wheel_paths: tuple[str, ...]


@dataclass(frozen=True)
class CiJob:
    id: str
    name: str
    runner: str
    arch: str
    builder_target: str
    builder_tag: str
    manylinux_policy: str
    package_dir: str
    output_dir: str  # the mirror folder: cuda110/, cpu/
    env: dict[str, str]
    wheel_paths: tuple[str, ...]


# The build tool inside the builder image (cibuildwheel's before_all installs it from the checkout):
# every manylinux image has CPython 3.11, the oldest the tool runs on; the cell's own Python may be older.
CONTAINER_TOOL_PYTHON = "/opt/python/cp311-cp311/bin/python"
CONTAINER_TOOL = "/opt/aiacc-build/bin/aiacc-build"
CONTAINER_COMMON_DIR = "/tmp/perseus-common"


def install_tool_command() -> str:
    return f"{CONTAINER_TOOL_PYTHON} -m venv /opt/aiacc-build && /opt/aiacc-build/bin/pip install -e {{project}}"


def repair_command(group: CellGroup) -> str:
    """`aiacc-build wheel repair`: auditwheel with the exclusion list, then the re-tag, as the local build."""
    release = shlex.quote(group.release_version)
    cuda = shlex.quote(naming.cuda_or_cpu(group.cuda))
    return f"{CONTAINER_TOOL} wheel repair --release {release} --cuda {cuda} --framework-python python --dest {{dest_dir}} {{wheel}}"


def common_install_command(group: CellGroup) -> str:
    """The test environment gets the release's perseus-common, built by `aiacc-build wheel common`."""
    wheel = naming.common_wheel_filename(group.release)
    return (
        f"{CONTAINER_TOOL} wheel common --release {shlex.quote(group.release_version)} --out {CONTAINER_COMMON_DIR}"
        f" && pip install {CONTAINER_COMMON_DIR}/{wheel}"
    )


def build_requirements(group: CellGroup) -> tuple[str, ...]:
    """The binding's [build-system] requires: cibuildwheel builds without isolation, next to the framework."""
    return read_binding_spec(adapter_for(group.framework).binding_dir(NATIVE_DIR)).build_requires


def _same_build(group: CellGroup) -> Cell:
    first = group.cells[0]
    for cell in group.cells[1:]:
        if cell.build != first.build:
            raise ValueError(f"cells {first.key} and {cell.key} of CI job {naming.ci_job_id(group)} install different framework builds")
    return first


def ci_job(group: CellGroup) -> CiJob:
    cell = _same_build(group)
    framework_args = " ".join(shlex.quote(a) for a in pip.framework_install_args(cell.build))
    arch = group.arch.value
    image_var = f"CIBW_MANYLINUX_{arch.upper()}_IMAGE"
    builder_tag = naming.builder_image_tag(group.release, group.cuda, arch)
    env_vars = {
        "PERSEUS_RELEASE": group.release_version,
        "PERSEUS_FRAMEWORK": group.framework.value,
        "PERSEUS_FRAMEWORK_VERSION": group.framework_version,
        "PERSEUS_CUDA": naming.cuda_or_cpu(group.cuda),
    }
    if group.cuda is not None:
        env_vars["CUDA_HOME"] = "/usr/local/cuda"
    env = {
        "CIBW_BUILD": naming.cibw_build_selector(group),
        "CIBW_ARCHS_LINUX": arch,
        image_var: builder_tag,
        "CIBW_BUILD_FRONTEND": "pip; args: --no-build-isolation",
        "CIBW_ENVIRONMENT": " ".join(f"{k}={shlex.quote(v)}" for k, v in env_vars.items()),
        "CIBW_BEFORE_ALL": install_tool_command(),
        "CIBW_BEFORE_BUILD": f"pip install wheel {' '.join(shlex.quote(r) for r in build_requirements(group))} {framework_args}",
        "CIBW_REPAIR_WHEEL_COMMAND": repair_command(group),
        "CIBW_BEFORE_TEST": common_install_command(group),
        "CIBW_TEST_COMMAND": f"pip install {framework_args} && {selftest_command(group)}",
    }
    accel = "CPU" if group.cuda is None else f"CUDA {group.cuda}"
    return CiJob(
        id=naming.ci_job_id(group),
        name=f"{group.framework.value} {group.framework_version} {accel} {arch}",
        runner=RUNNERS[group.arch],
        arch=arch,
        builder_target=naming.builder_bake_target(group.release, group.cuda, arch),
        builder_tag=builder_tag,
        manylinux_policy=group.release.manylinux_image,
        package_dir=binding_dir(group),
        output_dir=naming.accelerator_folder(cell),
        env=env,
        wheel_paths=tuple(naming.wheel_path(c) for c in group.cells),
    )


def selftest_command(group: CellGroup) -> str:
    """`aiacc-build wheel selftest`: the wheel's own self-test in the test environment (`python` on PATH),
    the arguments the local build's post-build test uses."""
    fw = group.framework.value
    return (
        f"{CONTAINER_TOOL} wheel selftest --release {shlex.quote(group.release_version)} --framework {fw}"
        f" --framework-version {shlex.quote(group.framework_version)} --python python"
    )


def not_built(group: CellGroup) -> NotBuilt | None:
    """Why a group gets no CI job (None: it gets one)."""
    reason = adapter_for(group.framework).binding_missing
    if reason is None:
        return None
    accel = "CPU" if group.cuda is None else f"CUDA {group.cuda}"
    return NotBuilt(
        id=naming.ci_job_id(group),
        name=f"{group.framework.value} {group.framework_version} {accel} {group.arch.value}",
        reason=reason,
        wheel_paths=tuple(naming.wheel_path(c) for c in group.cells),
    )


@dataclass(frozen=True)
class InstallCheck:
    """The cell whose framework the install-check job installs on a GitHub runner before running the
    release's install script against the mirror the index job made."""

    cell: Cell
    python: str
    requirement: str
    pip_args: str  # the exact framework build and where pip finds it, shell-quoted

    @property
    def name(self) -> str:
        accel = f"CUDA {self.cell.cuda}" if self.cell.cuda else "CPU"
        return f"install_AIACC-Training.sh: {self.cell.framework.value} {self.cell.framework_version} {accel} py{self.python}"


def install_check(cells: tuple[Cell, ...] | list[Cell]) -> InstallCheck | None:
    """An x86_64 cell with a binding, of one Python: CPU first (no GPU on the runner), then the newest."""
    fitting = [
        c for c in cells
        if adapter_for(c.framework).binding_missing is None and c.arch.value == "x86_64" and c.python
    ]
    if not fitting:
        return None
    cell = max(fitting, key=lambda c: (c.cuda is None, Version(c.framework_version), Version(c.python or "0")))
    assert cell.python is not None
    args = " ".join(shlex.quote(a) for a in pip.framework_install_args(cell.build))
    return InstallCheck(cell=cell, python=cell.python, requirement=cell.build.requirement, pip_args=args)


@dataclass(frozen=True)
class CaffeJob:
    """Builds libperseus-caffe and the patched Caffe (CPU_ONLY) on one platform, packages the release's Caffe
    artifacts (patches + archive) for the index job."""

    id: str
    platform: str
    runner: str


def caffe_jobs(release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell]) -> list[CaffeJob]:
    if release.caffe is None:
        return []
    arches = sorted({c.arch for c in cells}, key=lambda a: a.value)
    return [CaffeJob(id=f"caffe-{template.format(arch=a.value)}".replace("_", "-"),
                     platform=template.format(arch=a.value), runner=RUNNERS[a])
            for template in release.caffe.platforms for a in arches]


def render_ci(release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell]) -> RenderedFile:
    groups = group_cells(cells)
    skipped = [n for n in map(not_built, groups) if n is not None]
    jobs = [ci_job(g) for g in groups if not_built(g) is None]
    ids = [j.id for j in jobs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"release {release.version}: two CI jobs share an id")
    content = render(
        "ci/build-wheels.yml.j2",
        release=release,
        workflow_name=naming.ci_workflow_filename(release).removesuffix(".yml"),
        jobs=jobs,
        caffe_jobs=caffe_jobs(release, cells),
        not_built=skipped,
        tool_python=TOOL_PYTHON,
        common_wheel=naming.common_wheel_filename(release),
        expected=sorted({p for j in jobs for p in j.wheel_paths} | {naming.common_wheel_path(release)}),
        check=install_check(cells),
        install_script=naming.INSTALL_SCRIPT_NAME,
    )
    return RenderedFile(path=f"ci/{naming.ci_workflow_filename(release)}", content=content, kind="ci")
