"""`aiacc-build wheel ...`: the steps a CI job calls inside its builder image (one implementation with
the local build): which cell a built wheel is, perseus-common of the release, the self-test's exit."""

from __future__ import annotations

import json
import sys
import zipfile

import pytest

from aiacc_build import cuda_drivers
from aiacc_build.wheels.steps import cell_for_wheel, selftest_args
from aiacc_build.cli import main
from aiacc_build.errors import ConfigurationError, UnsupportedCellError
from aiacc_build.matrix import load_release
from aiacc_build.naming import wheel_filename

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

RELEASE = load_release("2.0.0")


def test_a_built_wheel_is_found_by_name_python_arch_and_cuda():
    cell = cell_for_wheel(RELEASE.cells, "perseus_torch-2.0.0+2.13.0-cp311-cp311-linux_x86_64.whl", "cpu")
    assert cell.key == "2.0.0/torch-2.13.0/cpu/py3.11/x86_64"
    cuda = cell_for_wheel(RELEASE.cells, "perseus_torch-2.0.0+2.13.0-cp311-cp311-linux_aarch64.whl", "13.0")
    assert cuda.key == "2.0.0/torch-2.13.0/cuda13.0/py3.11/aarch64"
    tf = cell_for_wheel(RELEASE.cells, "perseus_tensorflow-2.0.0+2.21.0-py3-none-linux_x86_64.whl", "cpu")
    assert wheel_filename(tf) == "perseus_tensorflow-2.0.0+2.21.0-py3-none-manylinux_2_28_x86_64.whl"
    # as cibuildwheel's build gives it: the building interpreter's tag, re-tagged to py3-none by the repair
    built = cell_for_wheel(RELEASE.cells, "perseus_tensorflow-2.0.0+2.21.0-cp310-cp310-linux_x86_64.whl", "cpu")
    assert built.key == tf.key


def test_a_wheel_of_no_cell_names_what_the_release_publishes():
    with pytest.raises(UnsupportedCellError) as wrong_cuda:
        cell_for_wheel(RELEASE.cells, "perseus_torch-2.0.0+2.13.0-cp311-cp311-linux_x86_64.whl", "12.4")
    assert "--cuda" in str(wrong_cuda.value)
    with pytest.raises(UnsupportedCellError) as wrong_release:
        cell_for_wheel(RELEASE.cells, "perseus_torch-1.5.0+2.13.0-cp311-cp311-linux_x86_64.whl", "cpu")
    assert "none of this distribution and version" in str(wrong_release.value)
    with pytest.raises(ConfigurationError):
        cell_for_wheel(RELEASE.cells, "not-a-wheel.zip", "cpu")


def test_selftest_arguments_are_the_wheels_own_module():
    cell = cell_for_wheel(RELEASE.cells, "perseus_torch-2.0.0+2.13.0-cp311-cp311-linux_x86_64.whl", "cpu")
    assert selftest_args(cell) == ["-m", "perseus.torch._selftest", "2.0.0", "2.13.0"]


def test_wheel_common_builds_the_release_version(tmp_path, capsys):
    assert main(["wheel", "common", "--release", "2.0.0", "--out", str(tmp_path), "--cache-dir", str(tmp_path / "cache"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == "2.0.0"
    with zipfile.ZipFile(data["path"]) as wheel:
        assert wheel.read("perseus/_version.py").decode().endswith('__version__ = "2.0.0"\n')
        metadata = wheel.read("perseus_common-2.0.0.dist-info/METADATA").decode()
        # doctor's CUDA-driver table is the matrix's (tests/matrix/test_cuda_consumers.py: another matrix's)
        assert wheel.read("perseus/_cuda_drivers.py").decode() == cuda_drivers.render_doctor(cuda_drivers.load())
    assert "\nVersion: 2.0.0\n" in metadata


def test_wheel_repair_of_a_wheel_of_no_cell_exits_4_and_changes_nothing(tmp_path, capsys):
    wheel = tmp_path / "perseus_torch-2.0.0+9.9.9-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"")
    code = main(["wheel", "repair", str(wheel), "--release", "2.0.0", "--cuda", "cpu", "--dest", str(tmp_path / "out")])
    assert code == UnsupportedCellError.exit_code
    assert not (tmp_path / "out").exists()


def test_wheel_selftest_passes_on_the_module_exit_code(tmp_path, capsys):
    # an interpreter without perseus.torch: the self-test's own failure is the command's failure
    code = main(["wheel", "selftest", "--release", "2.0.0", "--framework", "torch", "--framework-version", "2.13.0",
                 "--python", sys.executable, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["command"][1:] == ["-m", "perseus.torch._selftest", "2.0.0", "2.13.0"]
    assert (code == 0) == (out["exit_code"] == 0)
    assert main(["wheel", "selftest", "--release", "2.0.0", "--framework", "torch", "--framework-version", "0.1",
                 "--python", sys.executable]) == 6
