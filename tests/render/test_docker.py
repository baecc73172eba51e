from __future__ import annotations

from aiacc_build import naming
from aiacc_build.model import Framework
from aiacc_build.render.docker import bake_document, builder_images, checked_bases, docker_images
from aiacc_build.render.support import BuildHost

from .sample_releases import FIXED_HOST, MODERN, SEED, modern_cells, seed_cells


def test_published_images_cover_every_os_type_and_python_with_the_seed_tags():
    images = docker_images(seed_cells(), FIXED_HOST)
    tags = {i.tags[0] for i in images}
    assert "registry.cn-beijing.aliyuncs.com/cto_office/perseus-training:centos7-cu11.0-tf2.4.0-py36-latest" in tags
    assert "registry.cn-beijing.aliyuncs.com/cto_office/perseus-training:ubuntu1804-cu11.0-pt1.7.1-py38-latest" in tags
    assert len(images) == 2 * 5  # five cells (one Python each), two OS types, none built here (CUDA 10.x/11.0)
    tf = next(i for i in images if i.cell.framework is Framework("tensorflow") and i.os_type == "centos7")
    assert tf.args["BASE_IMAGE"] == "nvidia/cuda:11.0.3-cudnn8-devel-centos7"
    assert tf.args["CONDA_ENV_FILE"] == "conda/latest/tensorflow_2.4.0_cuda11.0_py36.yaml"
    ubuntu = next(i for i in images if i.os_type == "ubuntu1804")
    assert ubuntu.args["BASE_IMAGE"].endswith("-cudnn8-devel-ubuntu18.04")


def test_local_images_only_for_cells_built_here_with_the_base_python():
    images = [i for i in docker_images(modern_cells(), FIXED_HOST) if i.local]
    assert {i.tags[0] for i in images} == {
        "perseus-training:debian12-cpu-pt2.13.0-py311-latest",
        "perseus-training:debian12-cu13.0-pt2.13.0-py311-latest",
        "perseus-training:debian12-cpu-tf2.21.0-py311-latest",
    }  # tensorflow has a binding now; mxnet has none, so no wheel to put in an image
    cuda = next(i for i in images if i.cell.cuda == "13.0")
    assert [c.arch.value for c in cuda.variants] == ["x86_64"]  # aarch64 is not built on an x86_64 host
    assert cuda.args["BASE_IMAGE"] == "perseus-base:debian12-cuda13.0"
    assert cuda.args["PERSEUS_WHEELS"].split() == [
        "perseus_common-2.0.0-py3-none-any.whl",
        "cuda130/perseus_torch-2.0.0%2B2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl",
    ]
    no_pythons = BuildHost(arch="x86_64", pythons=frozenset())
    assert not [i for i in docker_images(modern_cells(), no_pythons) if i.local]


def test_multi_arch_cells_share_one_multi_platform_target():
    images, builders = docker_images(modern_cells(), FIXED_HOST), builder_images(MODERN, modern_cells())
    bake = bake_document(images, builders, checked_bases(images, builders))
    target = bake["target"]["ubuntu2204-cu13_0-pt2_13_0-py311-latest"]
    assert target["platforms"] == ["linux/amd64", "linux/arm64"]
    assert target["dockerfile"] == "docker/Dockerfile" and target["context"] == "."


def test_builders_one_per_cuda_and_arch():
    builders = builder_images(MODERN, modern_cells())
    assert [(b.cuda, b.arch.value) for b in builders] == [(None, "x86_64"), ("13.0", "x86_64"), ("13.0", "aarch64"), ("12.4", "x86_64")]
    cu = builders[1]
    assert cu.tag == naming.builder_image_tag(MODERN, "13.0", "x86_64") == "perseus-builder:manylinux_2_28-cuda13.0-x86_64"
    assert cu.args == {
        "MANYLINUX_IMAGE": "quay.io/pypa/manylinux_2_28_x86_64",
        "CUDA_IMAGE": "nvidia/cuda:13.0.1-devel-rockylinux8",
        "CUDA_VERSION": "13.0",
    }
    seed = builder_images(SEED, seed_cells())
    assert {b.args["CUDA_IMAGE"] for b in seed} == {"nvidia/cuda:11.0.3-devel-centos7", "nvidia/cuda:10.2-devel-centos7", "nvidia/cuda:10.0-devel-centos7"}


def test_the_usage_line_fits_the_image():
    images = docker_images(modern_cells(), FIXED_HOST)
    cpu = next(i for i in images if i.cell.cuda is None and not i.local)
    cuda = next(i for i in images if i.cell.cuda is not None and not i.local)
    assert "--gpus" not in cpu.args["DOCKER_RUN_ARGS"]
    assert cuda.args["DOCKER_RUN_ARGS"].startswith("--gpus all ")
    from aiacc_build.render.docker import render_docker

    dockerfile = next(f for f in render_docker(MODERN, modern_cells(), FIXED_HOST) if f.path == "docker/Dockerfile")
    assert 'perseus.usage="docker run ${DOCKER_RUN_ARGS} -it IMAGE' in dockerfile.content
    assert "--gpus" not in dockerfile.content  # only the CUDA images' build arguments carry it
