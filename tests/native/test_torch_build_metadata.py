"""The perseus_torch metadata provider: version <release>+<torch public version>, perseus-common only."""
import importlib.util
import os

import pytest

BUILD_SUPPORT = os.path.join(os.path.dirname(__file__), "..", "..", "native", "bindings", "torch", "build_support")


def load_provider():
    spec = importlib.util.spec_from_file_location("perseus_torch_build", os.path.join(BUILD_SUPPORT, "perseus_torch_build.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_release_comes_from_the_environment_or_the_default(torch, monkeypatch):
    provider = load_provider()
    public = torch.__version__.split("+")[0]
    default = open(os.path.join(BUILD_SUPPORT, "..", "..", "..", "release", "DEFAULT_RELEASE")).read().strip()
    monkeypatch.delenv("PERSEUS_RELEASE", raising=False)
    assert provider.dynamic_metadata("version", {}) == default + "+" + public
    monkeypatch.setenv("PERSEUS_RELEASE", "1.6.0")
    assert provider.dynamic_metadata("version", {}) == "1.6.0+" + public
    assert provider.dynamic_metadata("dependencies", {}) == ["perseus-common==1.6.0"]


def test_torch_is_read_from_a_given_directory_without_importing_it(torch, monkeypatch, tmp_path):
    fake = tmp_path / "torch"
    (fake / "lib").mkdir(parents=True)
    (fake / "version.py").write_text("__version__ = '1.7.1+cu110'\ncuda = '11.0'\n")
    (fake / "lib" / "libc10.so").write_bytes(b"\x7fELF no cxx11 names here")
    monkeypatch.setenv("PERSEUS_TORCH_DIR", str(fake))
    info = load_provider().torch_info.info()
    assert info["torch_version"] == "1.7.1+cu110"
    assert info["torch_public_version"] == "1.7.1"
    assert info["torch_cuda"] == "11.0"
    assert info["cxx11_abi"] is False
    assert info["cxx_standard"] == 17
    assert "python_tag" not in info  # the library is Python-free: its manifest says py3


def test_a_wrong_torch_dir_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PERSEUS_TORCH_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="PERSEUS_TORCH_DIR=.*no torch/version.py"):
        load_provider().torch_info.info()


def test_unknown_settings_are_refused():
    with pytest.raises(RuntimeError, match=r"takes no settings .*got \['relase'\]"):
        load_provider().dynamic_metadata("version", {"relase": "1.5.0"})
