"""The build manifest of the installed perseus_torch and the import-time check against the running torch."""
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata

import pytest

from perseus.torch import _native

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_installed_wheel_metadata_names_the_release_and_never_torch(torch, ops):
    dist = metadata.distribution("perseus_torch")
    release = json.loads(ops.build_manifest())["release"]
    assert dist.version == "%s+%s" % (release, torch.__version__.split("+")[0])
    assert dist.requires == ["perseus-common==%s" % release]


def test_wheel_holds_only_its_perseus_torch_subpackage(torch, ops):
    files = [str(path) for path in metadata.distribution("perseus_torch").files]
    installed = [f for f in files if ".dist-info" not in f and "__pycache__" not in f]
    assert installed and all(f.startswith("perseus/torch/") for f in installed), installed
    assert "perseus/__init__.py" not in files  # perseus-common owns the package root
    assert {"perseus/torch/_perseus_ops.so", "perseus/torch/build_manifest.json", "perseus/torch/_native.py"} <= set(files)


def test_manifest_describes_the_running_torch(torch, ops):
    manifest = _native.read_manifest()
    assert manifest["torch_version"] == torch.__version__
    assert manifest["torch_cuda"] == torch.version.cuda
    assert manifest["cxx11_abi"] == bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    assert manifest["python_tag"] == "py3"  # one build serves every CPython of this torch build
    assert manifest["compiler"]["id"] and manifest["compiler"]["version"]
    assert _native.build_manifest() == manifest  # the copy compiled into the library


def test_mismatches_name_every_difference():
    built = {"version": "1.5.0+1.7.1", "release": "1.5.0", "torch_version": "1.7.1+cu110", "torch_cuda": "11.0",
             "cxx11_abi": False, "python_tag": "cp36"}
    running = {"torch_version": "2.13.0+cpu", "torch_cuda": None, "cxx11_abi": True, "python_tag": "cp311"}
    found = _native.mismatches(built, running)
    assert found == [
        "torch 1.7.1+cu110 (built) vs 2.13.0+cpu (installed)",
        "CUDA 11.0 (built) vs CPU only (installed)",
        "pre-cxx11 ABI (built) vs cxx11 ABI (installed torch)",
        "Python cp36 (built) vs cp311 (running)",
    ]
    message = _native.mismatch_message(built, running, found)
    assert message.startswith("perseus_torch 1.5.0+1.7.1 was built for torch 1.7.1+cu110 (CUDA 11.0, pre-cxx11 ABI, "
                              "cp36) but torch 2.13.0+cpu (CPU only, cxx11 ABI, cp311) is installed")
    assert "Install perseus_torch 1.5.0+2.13.0 built for CPU only and cp311" in message
    assert "install_AIACC-Training.sh" in message
    assert _native.mismatches(dict(built, **running), running) == []
    assert _native.mismatches(dict(built, **dict(running, python_tag="py3")), running) == []  # any CPython 3


def copy_package(tmp_path, edit):
    """A copy of the installed perseus/torch files with an edited manifest."""
    target = tmp_path / "perseus_torch_copy"
    target.mkdir()
    for name in (_native.LIBRARY_FILE, _native.MANIFEST_FILE):
        shutil.copy(os.path.join(_native.package_dir(), name), str(target / name))
    manifest = json.loads((target / _native.MANIFEST_FILE).read_text())
    edit(manifest)
    (target / _native.MANIFEST_FILE).write_text(json.dumps(manifest))
    return target


def load_in_fresh_process(directory):
    code = (
        "import sys\n"
        "from perseus.torch import _native\n"
        "try:\n"
        "    _native.load(sys.argv[1])\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__ + ': ' + str(error))\n"
        "    sys.exit(3)\n"
        "print('loaded')\n"
    )
    return subprocess.run([sys.executable, "-c", code, str(directory)], capture_output=True, text=True, timeout=120)


def test_a_wheel_built_for_another_torch_refuses_to_load_and_says_which_to_install(torch, tmp_path):
    def built_for_171(manifest):
        manifest.update(version="1.5.0+1.7.1", release="1.5.0", torch_version="1.7.1+cu110", torch_cuda="11.0", cxx11_abi=False,
                        python_tag="cp36")

    result = load_in_fresh_process(copy_package(tmp_path, built_for_171))
    assert result.returncode == 3, result.stdout + result.stderr
    out = result.stdout
    assert out.startswith("BuildMismatchError: perseus_torch 1.5.0+1.7.1 was built for torch 1.7.1+cu110")
    assert "but torch %s" % torch.__version__ in out
    assert "Install perseus_torch 1.5.0+%s" % torch.__version__.split("+")[0] in out
    assert "install_AIACC-Training.sh" in out


def test_only_the_local_label_differs_is_still_a_mismatch(torch, tmp_path):
    public = torch.__version__.split("+")[0]
    result = load_in_fresh_process(copy_package(
        tmp_path, lambda m: m.update(torch_version=public + "+cu121", torch_cuda="12.1")))
    assert result.returncode == 3
    assert "CUDA 12.1 (built) vs" in result.stdout


def test_a_manifest_that_does_not_belong_to_the_library_is_caught(torch, tmp_path):
    result = load_in_fresh_process(copy_package(tmp_path, lambda m: m["compiler"].update(version="99.0")))
    assert result.returncode == 3
    assert result.stdout.startswith("BrokenInstallError: perseus_torch is inconsistent")


def test_a_missing_manifest_is_a_broken_install(tmp_path):
    with pytest.raises(_native.BrokenInstallError, match="cannot read .*build_manifest.json"):
        _native.read_manifest(str(tmp_path))
    (tmp_path / "build_manifest.json").write_text("{not json")
    with pytest.raises(_native.BrokenInstallError, match="not valid JSON"):
        _native.read_manifest(str(tmp_path))


def test_the_unedited_copy_loads(torch, tmp_path):
    result = load_in_fresh_process(copy_package(tmp_path, lambda m: None))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "loaded"
