from __future__ import annotations

import yaml

from aiacc_build import naming
from aiacc_build.model import Framework
from aiacc_build.render.conda import conda_env, render_conda
from aiacc_build.render.variants import arch_variants

from .sample_releases import modern_cells, seed_cells


def _env(cells, framework, version, cuda):
    for variants in arch_variants(cells):
        c = variants[0]
        if (c.framework, c.framework_version, c.cuda) == (framework, version, cuda):
            return variants
    raise AssertionError("no such cell")


def test_seed_era_torch_uses_conda_pytorch_and_cudatoolkit():
    variants = _env(seed_cells(), Framework("torch"), "1.7.1", "11.0")
    env = conda_env(variants, "3.6")
    assert env.filename == "torch_1.7.1_cuda11.0_py36.yaml"
    assert env.channels[:2] == ("pytorch", "conda-forge")
    assert {"python=3.6", "pytorch=1.7.1", "cudatoolkit=11.0"} <= set(env.dependencies)
    assert env.pip == (
        naming.common_wheel_url(variants[0].release),
        "https://ali-perseus-release.oss-cn-huhehaote.aliyuncs.com/cuda110/perseus_torch-1.5.0%2B1.7.1-cp36-cp36m-linux_x86_64.whl",
    )


def test_lts_torch_comes_from_its_channel():
    env = conda_env(_env(seed_cells(), Framework("torch"), "1.8.2", "10.2"), "3.7")
    assert env.channels[0] == "pytorch-lts"


def test_seed_era_tensorflow_from_pip_with_cudatoolkit_and_cudnn():
    env = conda_env(_env(seed_cells(), Framework("tensorflow"), "2.4.0", "11.0"), "3.6")
    assert "cudatoolkit=11.0" in env.dependencies and "cudnn" in env.dependencies
    assert not any(d.startswith("tensorflow") for d in env.dependencies)
    assert "tensorflow-gpu==2.4.0" in env.pip


def test_modern_era_pins_cuda_version_and_uses_pytorch_cuda_while_the_channel_exists():
    old = conda_env(_env(modern_cells(), Framework("torch"), "2.5.1", "12.4"), "3.10")
    assert "pytorch-cuda=12.4" in old.dependencies and "nvidia" in old.channels
    new = conda_env(_env(modern_cells(), Framework("torch"), "2.13.0", "13.0"), "3.11")
    assert "cuda-version=13.0" in new.dependencies and new.channels == ("conda-forge",)  # no nodefaults: conda 26.7 refuses it
    assert not any(d.startswith(("pytorch", "cudatoolkit")) for d in new.dependencies)
    assert new.pip[:2] == ("--extra-index-url https://download.pytorch.org/whl/cu130", "torch==2.13.0+cu130")


def test_cpu_cells_install_the_cpu_only_framework():
    torch = conda_env(_env(modern_cells(), Framework("torch"), "2.13.0", None), "3.11")
    assert "torch==2.13.0+cpu" in torch.pip and not any("cuda" in d for d in torch.dependencies)
    tf = conda_env(_env(modern_cells(), Framework("tensorflow"), "2.21.0", None), "3.12")
    assert "tensorflow-cpu==2.21.0" in tf.pip and tf.filename == "tensorflow_2.21.0_cpu_py312.yaml"


def test_arch_variants_share_one_file_and_pick_their_wheel_by_marker():
    variants = _env(modern_cells(), Framework("torch"), "2.13.0", "13.0")
    assert [c.arch.value for c in variants] == ["x86_64", "aarch64"]
    env = conda_env(variants, "3.11")
    markers = [line for line in env.pip if "platform_machine" in line]
    assert markers == [f'perseus_torch @ {naming.wheel_url(c)} ; platform_machine == "{c.arch.value}"' for c in variants]


def test_rendered_file_is_yaml_at_the_mirror_path():
    variants = _env(seed_cells(), Framework("mxnet"), "1.7.0", "10.0")
    rendered = render_conda(variants, "3.6")
    assert rendered.path == "conda/latest/mxnet_1.7.0_cuda10.0_py36.yaml"
    data = yaml.safe_load(rendered.content)
    assert data["name"] == "mxnet_1.7.0_cuda10.0_py36"
    assert data["dependencies"][-1]["pip"][-1].endswith("perseus_mxnet-1.5.0%2B1.7.0-py2.py3-none-manylinux1_x86_64.whl")
