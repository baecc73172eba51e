"""The build manifest of perseus_tensorflow and the import-time check against the running TensorFlow."""
import importlib.util
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

NATIVE = Path(__file__).resolve().parents[2] / "native" / "bindings" / "tensorflow" / "perseus" / "tensorflow" / "_native.py"


def _native_module():
    """_native.py from the sources (it imports TensorFlow only when loading): the pure checks need no TF."""
    spec = importlib.util.spec_from_file_location("perseus_tf_native_under_test", NATIVE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILT = {"version": "2.0.0+2.21.0", "release": "2.0.0", "tensorflow_version": "2.21.0", "tensorflow_cuda": None,
         "cxx11_abi": True, "cxx_standard": 17, "compiler": {"id": "GNU", "version": "12.2.0"}}


def test_a_matching_tensorflow_passes():
    _native_module().check_manifest(BUILT, {"tensorflow_version": "2.21.0", "tensorflow_cuda": None, "cxx11_abi": True})


def test_mismatch_names_every_difference_and_the_wheel_to_install():
    native = _native_module()
    running = {"tensorflow_version": "2.14.1", "tensorflow_cuda": "11.8", "cxx11_abi": False}
    with pytest.raises(native.BuildMismatchError) as caught:
        native.check_manifest(BUILT, running)
    text = str(caught.value)
    assert "TensorFlow 2.21.0 (built) vs 2.14.1 (installed)" in text
    assert "CPU only (built) vs CUDA 11.8 (installed)" in text
    assert "cxx11 ABI (built) vs pre-cxx11 ABI (installed TensorFlow)" in text
    assert "Install perseus_tensorflow 2.0.0+2.14.1" in text and "install_AIACC-Training.sh" in text
    assert isinstance(caught.value, ImportError)


def test_a_damaged_manifest_is_named(tmp_path):
    native = _native_module()
    (tmp_path / native.MANIFEST_FILE).write_text(json.dumps({"release": "2.0.0"}))
    with pytest.raises(native.BrokenInstallError, match="lacks version, tensorflow_version"):
        native.read_manifest(str(tmp_path))


def test_installed_wheel_metadata_and_files(tf, ops):
    dist = metadata.distribution("perseus_tensorflow")
    manifest = json.loads(ops.perseus_build_info()[0].numpy().decode())
    assert dist.version == "%s+%s" % (manifest["release"], tf.__version__.split("+")[0])
    assert dist.requires == ["perseus-common==%s" % manifest["release"]]  # never tensorflow itself
    files = {str(f) for f in dist.files if ".dist-info" not in str(f) and "__pycache__" not in str(f)}
    assert files and all(f.startswith("perseus/tensorflow/") for f in files), files
    assert {"perseus/tensorflow/_perseus_tf_ops.so", "perseus/tensorflow/build_manifest.json"} <= files


def test_manifest_describes_the_running_tensorflow(tf, ops):
    from perseus.tensorflow import _native

    manifest = _native.read_manifest()
    assert manifest["tensorflow_version"] == tf.__version__
    assert manifest["cxx11_abi"] == bool(tf.sysconfig.CXX11_ABI_FLAG)
    assert manifest["engine"] == "static"
    assert _native.build_manifest() == manifest


def test_op_library_imports_no_python_symbol_and_exports_only_the_c_abi(ops):
    from perseus.tensorflow import _native

    undefined = subprocess.run(["nm", "-D", "--undefined-only", _native.library_path()], capture_output=True,
                               text=True, check=True).stdout.split()
    assert not [s for s in undefined if s.startswith("Py") or s.startswith("_Py")]
    defined = subprocess.run(["nm", "-D", "--defined-only", _native.library_path()], capture_output=True,
                             text=True, check=True).stdout.splitlines()
    names = [line.split()[-1] for line in defined if line.split()[1] in "TDBRW"]
    assert names and all(n.startswith(("perseus_engine_", "perseus_tf_")) for n in names), names


def test_selftest_runs(tf, ops):
    proc = subprocess.run([sys.executable, "-m", "perseus.tensorflow._selftest"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "compress fp32->fp16 x2.0 ok, 3 non-finite" in proc.stdout
    assert "one-rank engine allreduce/allgather ok" in proc.stdout


def test_a_wheel_built_for_another_tensorflow_is_refused_before_loading(tf, ops, tmp_path):
    from perseus.tensorflow import _native

    other = tmp_path / "tensorflow"
    other.mkdir()
    manifest = _native.read_manifest()
    manifest["tensorflow_version"] = "2.14.1"
    (other / _native.MANIFEST_FILE).write_text(json.dumps(manifest))
    code = ("import sys; from perseus.tensorflow import _native\n"
            "try:\n    _native.load(sys.argv[1])\nexcept _native.BuildMismatchError as e:\n    print(e); sys.exit(3)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(other)], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "TensorFlow 2.14.1 (built) vs %s (installed)" % tf.__version__ in proc.stdout
    assert "Install perseus_tensorflow %s+%s" % (manifest["release"], tf.__version__) in proc.stdout
