"""Two small releases built from real model objects, one per era, for renderer tests and golden files.

They do not replace the matrix: tests that render the shipped releases load them with
aiacc_build.matrix. These stay small and fixed so that golden snapshots change only when the
templates change.
"""

from __future__ import annotations

from aiacc_build.model import (Arch, CaffeArtifacts, Cell, Framework, FrameworkBuild, MxnetSourcePatch, ReleaseInfo,
                               WheelTagRules)
from aiacc_build.render.support import BuildHost

CAFFE = CaffeArtifacts(
    upstream_commit="99bd99795dcdf0b1d3086a8d67ab1782a8a08383",
    patches=("1_perseus_distribute_train.patch", "2_cudnn_batchnorm.patch", "3_data_augmentation.patch"),
    platforms=("linux_{arch}",),
    gpu_toolkit="CUDA 10.2 + cuDNN 7.6",
)

MXNET_PATCH = MxnetSourcePatch(upstream_version="1.9.1", upstream_commit="3f8f3be9987e259491ddc5a78aa9c6903e0b21e3",
                               patch="perseus-mxnet-sync-bn.patch")

SEED = ReleaseInfo(
    version="1.5.0",
    cibuildwheel="2.16.5",
    manylinux_image="manylinux2014",
    docker_os_types=("centos7", "ubuntu1804"),
    local_os_type="debian12",
    mirror_url="https://ali-perseus-release.oss-cn-huhehaote.aliyuncs.com",
    docker_registry="registry.cn-beijing.aliyuncs.com/cto_office",
    docker_image="perseus-training",
    docker_tag_suffix="latest",
    conda_dir="conda/latest",
    wheel_tags=WheelTagRules(
        independent_python_tag="py2.py3",
        platform={Framework("torch"): "linux_{arch}", Framework("tensorflow"): "manylinux1_{arch}", Framework("mxnet"): "manylinux1_{arch}"},
        repair_platform={f: "manylinux2014_{arch}" for f in Framework},
    ),
    caffe=CAFFE,
)

MODERN = ReleaseInfo(
    version="2.0.0",
    cibuildwheel="3.1.4",
    manylinux_image="manylinux_2_28",
    docker_os_types=("ubuntu2204",),
    local_os_type="debian12",
    mirror_url="https://ali-perseus-release.oss-cn-huhehaote.aliyuncs.com",
    docker_registry="registry.cn-beijing.aliyuncs.com/cto_office",
    docker_image="perseus-training",
    docker_tag_suffix="latest",
    conda_dir="conda/latest",
    wheel_tags=WheelTagRules(
        independent_python_tag="py3",
        platform={f: "manylinux_2_28_{arch}" for f in Framework},
        repair_platform={f: "manylinux_2_28_{arch}" for f in Framework},
    ),
    caffe=CAFFE,
    mxnet_patch=MXNET_PATCH,
)

TORCH_STABLE = "https://download.pytorch.org/whl/torch_stable.html"


def _cell(release, framework, version, cuda, python, build, env_pythons=None, arch=Arch.X86_64) -> Cell:
    return Cell(
        release=release,
        release_version=release.version,
        framework=framework,
        framework_version=version,
        cuda=cuda,
        python=python,
        arch=arch,
        env_pythons=env_pythons or (python,),
        build=build,
    )


def seed_cells() -> tuple[Cell, ...]:
    torch171 = FrameworkBuild("torch==1.7.1+cu110", TORCH_STABLE, "cu110", False)
    torch182 = FrameworkBuild("torch==1.8.2+cu102", "https://download.pytorch.org/whl/lts/1.8/torch_lts.html", "cu102", False)
    return (
        _cell(SEED, Framework("torch"), "1.7.1", "11.0", "3.6", torch171),
        _cell(SEED, Framework("torch"), "1.7.1", "11.0", "3.8", torch171),
        _cell(SEED, Framework("torch"), "1.8.2", "10.2", "3.7", torch182),
        _cell(SEED, Framework("tensorflow"), "2.4.0", "11.0", None, FrameworkBuild("tensorflow-gpu==2.4.0", None, None, None), ("3.6",)),
        _cell(SEED, Framework("mxnet"), "1.7.0", "10.0", None, FrameworkBuild("mxnet-cu100==1.7.0", None, "cu100", None), ("3.6",)),
    )


def modern_cells() -> tuple[Cell, ...]:
    cpu = FrameworkBuild("torch==2.13.0+cpu", "https://download.pytorch.org/whl/cpu", "cpu", True)
    cu130 = FrameworkBuild("torch==2.13.0+cu130", "https://download.pytorch.org/whl/cu130", "cu130", True)
    cu124 = FrameworkBuild("torch==2.5.1+cu124", "https://download.pytorch.org/whl/cu124", "cu124", False)
    return (
        _cell(MODERN, Framework("torch"), "2.13.0", None, "3.11", cpu),
        _cell(MODERN, Framework("torch"), "2.13.0", None, "3.12", cpu),
        _cell(MODERN, Framework("torch"), "2.13.0", "13.0", "3.11", cu130),
        _cell(MODERN, Framework("torch"), "2.13.0", "13.0", "3.11", cu130, arch=Arch.AARCH64),
        _cell(MODERN, Framework("torch"), "2.5.1", "12.4", "3.10", cu124),
        _cell(MODERN, Framework("tensorflow"), "2.21.0", None, None, FrameworkBuild("tensorflow-cpu==2.21.0", None, None, None), ("3.11", "3.12")),
        _cell(MODERN, Framework("mxnet"), "1.9.1", None, None, FrameworkBuild("mxnet==1.9.1", None, None, None), ("3.9",)),
    )


# A fixed host for golden files: x86_64 with Pythons 3.6-3.13 and the three local CUDA toolkits.
FIXED_HOST = BuildHost(arch="x86_64", pythons=frozenset(f"3.{m}" for m in range(6, 14)), cuda_toolkits=("11.8", "12.4", "13.0"))
