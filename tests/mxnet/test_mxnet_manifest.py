"""perseus_mxnet's build manifest check and its build-time reader of the installed mxnet, without mxnet."""

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

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


CHECK = r"""
import importlib.util, json, os, shutil, sys
locations = importlib.util.find_spec("perseus.mxnet").submodule_search_locations
installed = [d for d in locations if os.path.isfile(os.path.join(d, "build_manifest.json"))][0]
spec = importlib.util.spec_from_file_location("fresh_native", sys.argv[4])  # this checkout's loader
native = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native)  # a fresh loader: nothing loaded yet in this process
target = sys.argv[1]
shutil.copytree(installed, target)
path = os.path.join(target, native.MANIFEST_FILE)
manifest = json.load(open(path))
manifest[sys.argv[2]] = sys.argv[3]
json.dump(manifest, open(path, "w"))
try:
    native.load(target)
except ImportError as error:
    print(type(error).__name__ + ": " + str(error))
else:
    print("loaded")
"""


def _load_altered(python, tmp_path, key, value):
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(BINDING.parents[1] / "runtime"))
    proc = subprocess.run([python, "-c", CHECK, str(tmp_path / "copy"), key, value,
                           str(BINDING / "perseus" / "mxnet" / "_native.py")], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout.strip().splitlines()[-1]


def test_real_mxnet_refuses_a_wheel_built_for_another(mxnet_python, tmp_path):
    line = _load_altered(mxnet_python, tmp_path, "mxnet_version", "1.8.0")
    assert line.startswith("BuildMismatchError: ") and "mxnet 1.8.0 (built) vs 1.9.1 (installed)" in line
    assert "Install perseus_mxnet" in line and "+1.9.1" in line


def test_real_library_whose_manifest_file_was_swapped(mxnet_python, tmp_path):
    line = _load_altered(mxnet_python, tmp_path, "system", "Linux-aarch64")
    assert line.startswith("BrokenInstallError: ") and "is inconsistent" in line
