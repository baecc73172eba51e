"""Names the renderer added to aiacc_build.naming."""

from __future__ import annotations

import pytest

from aiacc_build import naming

from .sample_releases import MODERN, SEED, modern_cells, seed_cells


def test_common_wheel_and_install_script_urls():
    assert naming.common_wheel_url(SEED) == "https://ali-perseus-release.oss-cn-huhehaote.aliyuncs.com/perseus_common-1.5.0-py3-none-any.whl"
    assert naming.install_script_url(SEED) == "https://ali-perseus-release.oss-cn-huhehaote.aliyuncs.com/install_AIACC-Training.sh"


def test_base_images():
    cell = seed_cells()[0]
    assert naming.docker_base_image(cell, "centos7") == "nvidia/cuda:11.0.3-cudnn8-devel-centos7"
    assert naming.docker_base_image(cell, "ubuntu1804") == "nvidia/cuda:11.0.3-cudnn8-devel-ubuntu18.04"
    assert naming.docker_base_image(cell, "debian12") == "perseus-base:debian12-cuda11.0"
    cpu = modern_cells()[0]
    assert naming.docker_base_image(cpu, "ubuntu2204") == "ubuntu:22.04"
    assert naming.docker_base_image(cpu, "debian12") == "perseus-base:debian12-cpu"
    with pytest.raises(ValueError, match="no distribution image known"):
        naming.distro_base_image("plan9")


def test_builder_names():
    assert naming.manylinux_base_image(SEED, "x86_64") == "quay.io/pypa/manylinux2014_x86_64"
    assert naming.builder_cuda_image(MODERN, "12.4") == "nvidia/cuda:12.4.1-devel-rockylinux8"
    assert naming.builder_bake_target(SEED, "11.0", "x86_64") == "builder-manylinux2014-cuda11_0-x86_64"
    assert naming.builder_bake_target(MODERN, None, "aarch64") == "builder-manylinux_2_28-cpu-aarch64"


def test_bake_target_and_workflow_and_env_names():
    cell = seed_cells()[0]
    assert naming.docker_bake_target(cell, "centos7", "3.6") == "centos7-cu11_0-pt1_7_1-py36-latest"
    assert naming.ci_workflow_filename(SEED) == "build-wheels-1.5.0.yml"
    assert naming.conda_env_name(cell, "3.6") == "torch_1.7.1_cuda11.0_py36"
