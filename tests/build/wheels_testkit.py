"""Cells and a release for the build and index tests, shaped like the 2.0.0 matrix's local cell."""

from __future__ import annotations

import dataclasses

from aiacc_build.model import Arch, Cell, Framework, FrameworkBuild, ReleaseInfo, WheelTagRules

LOCAL_TORCH_FILE = "/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"

RELEASE = ReleaseInfo(
    version="2.0.0",
    cibuildwheel="3.3.0",
    manylinux_image="manylinux_2_28",
    docker_os_types=("ubuntu2204",),
    local_os_type="debian12",
    mirror_url="https://mirror.invalid/aiacc",
    docker_registry="registry.invalid/perseus",
    docker_image="perseus-training",
    docker_tag_suffix="latest",
    conda_dir="conda/latest",
    wheel_tags=WheelTagRules(
        independent_python_tag="py3",
        platform={f: "linux_{arch}" for f in Framework},
        repair_platform={f: "manylinux_2_28_{arch}" for f in Framework},
    ),
)


def torch_cell(
    version: str = "2.13.0",
    cuda: str | None = None,
    python: str = "3.11",
    *,
    requirement: str | None = None,
    variant: str | None = "cpu",
    release: ReleaseInfo = RELEASE,
) -> Cell:
    if requirement is None:
        requirement = f"torch=={version}+{variant}" if variant else f"torch=={version}"
    return Cell(
        release=release,
        release_version=release.version,
        framework=Framework.TORCH,
        framework_version=version,
        cuda=cuda,
        python=python,
        arch=Arch.X86_64,
        env_pythons=(python,),
        build=FrameworkBuild(
            requirement=requirement,
            index_url=None,
            cuda_variant=variant,
            cxx11_abi=True,
        ),
    )


LOCAL_CELL = torch_cell()


def with_release(cell: Cell, version: str) -> Cell:
    """The same cell in another release (the bench builds one framework build for several releases)."""
    release = dataclasses.replace(cell.release, version=version)
    return dataclasses.replace(cell, release=release, release_version=version)
