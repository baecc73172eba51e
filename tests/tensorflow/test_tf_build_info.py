"""build_support/tensorflow_info.py: what the build takes from tf.sysconfig (C++ standard and ABI of the
TensorFlow built against) and PERSEUS_TENSORFLOW_PYTHON, the interpreter that has that TensorFlow."""
import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

INFO = Path(__file__).resolve().parents[2] / "native" / "bindings" / "tensorflow" / "build_support" / "tensorflow_info.py"
# tf.sysconfig of tensorflow-cpu 1.15.0 (CPython 3.6) and of tensorflow-cpu 2.21.0, as they print them
TF115 = (["-I/v/site-packages/tensorflow_core/include", "-D_GLIBCXX_USE_CXX11_ABI=0"],
         ["-L/v/site-packages/tensorflow_core", "-l:libtensorflow_framework.so.1"])
TF221 = (["-I/v/site-packages/tensorflow/include", "-D_GLIBCXX_USE_CXX11_ABI=1", "--std=c++17", "-DEIGEN_MAX_ALIGN_BYTES=64"],
         ["-L/v/site-packages/tensorflow", "-l:libtensorflow_framework.so.2"])


@pytest.fixture
def info_module():
    spec = importlib.util.spec_from_file_location("perseus_tf_info_under_test", INFO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tensorflow_1_names_no_standard_and_is_built_as_cxx14_pre_cxx11(info_module):
    flags = info_module.parse_flags(*TF115)
    assert (flags["cxx_standard"], flags["cxx11_abi"]) == (14, False)
    assert flags["framework_library"] == "libtensorflow_framework.so.1"
    assert flags["lib_dir"].endswith("tensorflow_core")


def test_a_named_standard_is_taken_as_is(info_module):
    flags = info_module.parse_flags(*TF221)
    assert (flags["cxx_standard"], flags["cxx11_abi"], flags["defines"]) == (17, True, "EIGEN_MAX_ALIGN_BYTES=64")
    assert info_module.parse_flags(TF221[0][:2] + ["-std=c++14"], TF221[1])["cxx_standard"] == 14


def test_another_python_without_tensorflow_is_named(info_module, monkeypatch, tmp_path):
    monkeypatch.setenv("PERSEUS_TENSORFLOW_PYTHON", str(tmp_path / "no-such-python"))
    with pytest.raises(info_module.TensorflowNotFound, match="PERSEUS_TENSORFLOW_PYTHON=.*no-such-python cannot be run"):
        info_module.info()


def test_another_python_reports_its_tensorflow(info_module, monkeypatch, tf):
    """The variable naming the build's own interpreter changes nothing; the re-run path gives the same."""
    monkeypatch.setenv("PERSEUS_TENSORFLOW_PYTHON", sys.executable)
    own = info_module.info()
    assert own == info_module._info_from(sys.executable)
    assert own["tensorflow_version"] == tf.__version__


def test_the_build_tool_points_a_separate_backend_at_the_cells_interpreter():
    from aiacc_build.adapters.tensorflow import TensorflowAdapter

    site = Path("/envs/py36/lib/python3.6/site-packages")
    assert TensorflowAdapter().build_environment(site) == {"PERSEUS_TENSORFLOW_PYTHON": "/envs/py36/bin/python"}
