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
from ..adapters import adapter_for, excluded_libraries
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


def repair_command(group: CellGroup) -> str:
    cell = group.cells[0]
    excludes = " ".join(f"--exclude {shlex.quote(e)}" for e in excluded_libraries())
    published = cell.release.wheel_tags.platform[cell.framework].format(arch=cell.arch.value)
    repaired = cell.release.wheel_tags.repair_platform[cell.framework].format(arch=cell.arch.value)
    if published == repaired:
        return f"auditwheel repair {excludes} -w {{dest_dir}} {{wheel}}"
    # The release publishes another platform tag than auditwheel gives: re-tag back so the names match.
    return (
        "rm -rf /tmp/perseus-repaired"
        f" && auditwheel repair {excludes} -w /tmp/perseus-repaired {{wheel}}"
        f" && python -m wheel tags --remove --platform-tag {published} /tmp/perseus-repaired/*.whl"
        " && mv /tmp/perseus-repaired/*.whl {dest_dir}"
    )


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
        "CIBW_BEFORE_BUILD": f"pip install wheel {framework_args}",
        "CIBW_REPAIR_WHEEL_COMMAND": repair_command(group),
        "CIBW_BEFORE_TEST": "pip install {project}/native/runtime",
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
    """The wheel's own self-test, as the local build and the install script run it."""
    module = adapter_for(group.framework).selftest_module
    return f"python -m {module} {shlex.quote(group.release_version)} {shlex.quote(group.framework_version)}"


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
        not_built=skipped,
        tool_python=TOOL_PYTHON,
        common_wheel=naming.common_wheel_filename(release),
        expected=sorted({p for j in jobs for p in j.wheel_paths} | {naming.common_wheel_path(release)}),
        check=install_check(cells),
        install_script=naming.INSTALL_SCRIPT_NAME,
    )
    return RenderedFile(path=f"ci/{naming.ci_workflow_filename(release)}", content=content, kind="ci")
