"""perseus_mxnet's build manifest check and its build-time reader of the installed mxnet, without mxnet."""

import importlib.util
from pathlib import Path

import pytest

BINDING = Path(__file__).resolve().parents[2] / "native" / "bindings" / "mxnet"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


native = _load("perseus_mxnet_native", BINDING / "perseus" / "mxnet" / "_native.py")
mxnet_info = _load("perseus_mxnet_info", BINDING / "build_support" / "mxnet_info.py")

MANIFEST = {"release": "2.0.0", "version": "2.0.0+1.9.1", "mxnet_version": "1.9.1", "mxnet_cuda": None,
            "python_tag": "py3", "compiler": {"id": "GNU", "version": "12.2.0"}}


def test_matching_environment_passes():
    native.check_manifest(MANIFEST, {"mxnet_version": "1.9.1", "mxnet_cuda": None, "python_tag": "cp39"})


def test_other_mxnet_names_both_and_the_wheel_to_install():
    with pytest.raises(native.BuildMismatchError) as info:
        native.check_manifest(MANIFEST, {"mxnet_version": "1.8.0", "mxnet_cuda": "11.2", "python_tag": "cp38"})
    text = str(info.value)
    assert "mxnet 1.9.1 (built) vs 1.8.0 (installed)" in text
    assert "CPU only (built, mxnet) vs CUDA 11.2 (installed)" in text
    assert "Install perseus_mxnet 2.0.0+1.8.0 built for CUDA 11.2" in text
    assert "install_AIACC-Training.sh" in text


def test_missing_manifest_is_a_broken_install(tmp_path):
    with pytest.raises(native.BrokenInstallError, match="cannot read .*build_manifest.json"):
        native.read_manifest(str(tmp_path))
    (tmp_path / "build_manifest.json").write_text('{"release": "2.0.0"}')
    with pytest.raises(native.BrokenInstallError, match="lacks version, mxnet_version"):
        native.read_manifest(str(tmp_path))


@pytest.mark.parametrize("dist_info, cuda", [
    ("mxnet-1.9.1.dist-info", None),
    ("mxnet_cu112-1.9.1.dist-info", "11.2"),
    ("mxnet_cu101mkl-1.5.0.dist-info", "10.1"),
    ("mxnet_mkl-1.6.0.dist-info", None),
])
def test_cuda_of_the_installed_distribution(dist_info, cuda):
    assert mxnet_info.cuda_of_distribution(dist_info) == cuda


def test_build_reader_needs_the_wheels_headers(tmp_path, monkeypatch):
    (tmp_path / "libinfo.py").write_text('__version__ = "1.9.1"\n')
    monkeypatch.setenv("PERSEUS_MXNET_DIR", str(tmp_path))
    with pytest.raises(mxnet_info.MxnetNotFound, match="no include/mxnet/base.h"):
        mxnet_info.info()
