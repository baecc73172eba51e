"""install_AIACC-Training.sh with the TensorFlow and MXNet cells of the default build (tests/wheels): next to
an installed tensorflow-cpu 2.21.0 (Python 3.11), in one environment holding torch 2.13.0 and TensorFlow
(both wheels, both self-tests), and next to mxnet 1.9.1 (Python 3.9, numpy<1.24). The frameworks' own
files are never touched; the wheels' self-tests run as the script runs them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from installer_kit import python_venv, run_script, snapshot, write_script
from local_build import MXNET_KEY, TENSORFLOW_KEY
from wheels_testkit import LOCAL_TORCH_FILE

from aiacc_build import naming
from aiacc_build.wheels.cache import BuildCache
from aiacc_build.wheels.envs import create_venv, install
from aiacc_build.wheels.toolchain import find_interpreter

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

TENSORFLOW = "tensorflow-cpu==2.21.0"


@pytest.fixture(scope="module")
def release(local_build):
    return local_build.release


@pytest.fixture(scope="module")
def script(release, tmp_path_factory) -> Path:
    return write_script(tmp_path_factory.mktemp("script"), release.info, release.cells)


def _wheel_path(local_build, key: str) -> str:
    return local_build.path(key)  # as the build named it (the platform tag it proved)


def _framework_files(snap, package: str) -> dict[str, str]:
    return {path: digest for path, digest in snap.files.items() if f"/site-packages/{package}/" in path}


def _install(script: Path, mirror: Path, python: Path):
    result = run_script(script, "--mirror", str(mirror), str(python), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_next_to_tensorflow(script, local_build, tmp_path):
    env = python_venv(tmp_path / "venv", local_build.cache_dir, TENSORFLOW)
    before = snapshot(env)
    out = _install(script, local_build.root, env.python)
    assert f"decision:   tensorflow -> {_wheel_path(local_build, TENSORFLOW_KEY)}" in out
    assert "perseus_tensorflow-2.0.0+2.21.0-py3-none-manylinux" in out
    assert out.count("verified:   sha256 ") == 2  # perseus-common and perseus_tensorflow
    assert "check:      perseus 2.0.0, perseus.tensorflow 2.0.0+2.21.0 (TensorFlow 2.21.0, dispatch " in out
    assert "one-rank engine allreduce/allgather ok" in out
    after = snapshot(env)
    assert _framework_files(after, "tensorflow") == _framework_files(before, "tensorflow")
    assert len(_framework_files(before, "tensorflow")) > 1000
    assert [line for line in after.differences(before) if "perseus" not in line] == []
    # the one-line change of the manual works in the installed environment
    code = "import perseus.tensorflow.horovod as hvd; print(hvd.__name__, callable(hvd.DistributedOptimizer))"
    done = subprocess.run([str(env.python), "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "perseus.tensorflow.horovod True" in done.stdout, done.stdout + done.stderr


def test_torch_and_tensorflow_in_one_environment(script, local_build, tmp_path):
    env = python_venv(tmp_path / "venv", local_build.cache_dir, LOCAL_TORCH_FILE, TENSORFLOW)
    before = snapshot(env)
    out = _install(script, local_build.root, env.python)
    assert "decision:   torch -> cpu/perseus_torch-2.0.0+2.13.0-cp311-cp311-" in out
    assert f"decision:   tensorflow -> {_wheel_path(local_build, TENSORFLOW_KEY)}" in out
    assert out.count("verified:   sha256 ") == 3  # perseus-common, perseus_torch, perseus_tensorflow
    assert "perseus.torch 2.0.0+2.13.0 (torch 2.13.0+cpu" in out
    assert "perseus.tensorflow 2.0.0+2.21.0 (TensorFlow 2.21.0" in out
    after = snapshot(env)
    for package in ("torch", "tensorflow"):
        assert _framework_files(after, package) == _framework_files(before, package), package
    freeze = [line for line in after.freeze if "perseus" in line.lower()]
    assert sorted(freeze) == ["perseus-common==2.0.0", "perseus_tensorflow==2.0.0+2.21.0",
                              "perseus_torch==2.0.0+2.13.0"], freeze


def test_next_to_mxnet(script, local_build, tmp_path):
    interpreter = find_interpreter("3.9")
    if interpreter is None:
        pytest.fail("no Python 3.9 under pyenv: the mxnet 1.9.1 cell is built and installed with it")
    cache = BuildCache(local_build.cache_dir)
    env = create_venv(tmp_path / "venv", interpreter, cache)
    install(env, ["mxnet==1.9.1", "numpy<1.24", "pip"], cache)
    before = snapshot(env)
    out = _install(script, local_build.root, env.python)
    assert f"decision:   mxnet -> {_wheel_path(local_build, MXNET_KEY)}" in out
    assert "check:      perseus 2.0.0, perseus.mxnet 2.0.0+1.9.1 (mxnet 1.9.1, dispatch " in out
    after = snapshot(env)
    assert _framework_files(after, "mxnet") == _framework_files(before, "mxnet")
    assert [line for line in after.differences(before) if "perseus" not in line] == []
    code = ("import mxnet as mx, perseus.mxnet as hvd\n"
            "print(type(mx.gluon.contrib.nn.PerseusSyncBatchNorm(comm_scope=1)).__name__)")
    done = subprocess.run([str(env.python), "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "PerseusSyncBatchNorm" in done.stdout, done.stdout + done.stderr
