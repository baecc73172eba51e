"""Environments of the opt-in TensorFlow tests (AIACC_OPTIN=1), kept in build/ between runs:

- TensorFlow 2.14.1 (Keras 2, tf.estimator): the matrix's cell tensorflow-2.14.1/cpu/py-any/x86_64 built by
  `aiacc-build build --cells` (its build cache makes a second run take seconds), its perseus_tensorflow and
  perseus_common wheels installed into a Python 3.11 venv with tensorflow-cpu 2.14.1 (~190 MiB download).
- TensorFlow 1.15 (the probe): tensorflow-cpu 1.15.0 on CPython 3.6 (pyenv's), pip 21.3 (>= 19),
  protobuf < 4, pre-cxx11 ABI. scikit-build-core needs Python >= 3.7, so the tool's Python 3.11 builds the
  wheel and PERSEUS_TENSORFLOW_PYTHON points the build at the 3.6 interpreter whose TensorFlow it
  compiles against (tf.sysconfig's flags: C++14, _GLIBCXX_USE_CXX11_ABI=0).
"""
import glob
import os
import subprocess
import sys
from pathlib import Path
from typing import List

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD = REPO_ROOT / "build"
TOOL_BIN = Path(sys.executable).parent
TF214_CELL = "tensorflow-2.14.1/cpu/py-any/x86_64"
TF214_CUDA_CELL = "tensorflow-2.14.1/cuda11.8/py-any/x86_64"
# where a CUDA cell's wheels are built by hand (docs/tensorflow-mxnet.md): CXX=g++-11 aiacc-build build --cells
# tensorflow-2.14.1/cuda11.8/py-any/x86_64 --dist build/cuda-dist
CUDA_DIST = BUILD / "cuda-dist"


def pyenv_python(minor: str) -> str:
    found = sorted(glob.glob("/root/.pyenv/versions/%s.*/bin/python%s" % (minor, minor)))
    if not found:
        raise RuntimeError("no Python %s under /root/.pyenv/versions: install it (pyenv install %s)" % (minor, minor))
    return found[-1]


def run(cmd: List[str], env: dict = None, timeout: int = 3600) -> str:
    done = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError("%s failed (exit %d):\n%s" % (" ".join(str(c) for c in cmd), done.returncode,
                                                      done.stdout[-4000:]))
    return done.stdout


def pip_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PERSEUS_", "PIP_REQUIRE"))}


def one_wheel(pattern: str) -> Path:
    found = sorted(glob.glob(pattern))
    if len(found) != 1:
        raise RuntimeError("expected one wheel %s, found %s" % (pattern, found))
    return Path(found[0])


def _fresh_venv(python: str, venv: Path, marker: Path, stamp: str) -> bool:
    """True when venv already holds what `stamp` describes; else (re)creates it empty."""
    if marker.is_file() and marker.read_text() == stamp:
        return True
    run(["rm", "-rf", venv])
    run([python, "-m", "venv", venv])
    return False


def tf214_python() -> Path:
    """The Python of a venv with tensorflow-cpu 2.14.1 and this checkout's 2.14.1 cell wheels."""
    dist = BUILD / "optin-tf214"
    run([TOOL_BIN / "aiacc-build", "build", "--cells", TF214_CELL, "--dist", dist, "-j2"], env=pip_env())
    release = run([sys.executable, "-c", "from aiacc_build.matrix.loader import default_release; "
                   "print(default_release())"]).strip()
    binding = one_wheel(str(dist / release / "cpu" / "perseus_tensorflow-*+2.14.1-*.whl"))
    common = one_wheel(str(dist / release / "perseus_common-*.whl"))
    venv = dist / "venv-py311"
    stamp = "%s %s %s\n" % (binding.name, binding.stat().st_mtime, common.stat().st_mtime)
    if not _fresh_venv(pyenv_python("3.11"), venv, dist / "venv-py311.ok", stamp):
        # uv with the build tool's cache: the cell's smoke test already downloaded tensorflow-cpu 2.14.1
        uv = [TOOL_BIN / "uv", "pip", "install", "--python", venv / "bin" / "python"]
        env = {**pip_env(), "UV_CACHE_DIR": str(REPO_ROOT / ".cache" / "aiacc-build" / "uv")}
        run(uv + ["tensorflow-cpu==2.14.1", "numpy<2", str(common)], env=env)
        run(uv + ["--no-deps", "--reinstall", str(binding)], env=env)
        (dist / "venv-py311.ok").write_text(stamp)
    return venv / "bin" / "python"


def tf115_python() -> Path:
    """The Python (3.6) of a venv with tensorflow-cpu 1.15.0 and a perseus_tensorflow built against it."""
    work = BUILD / "tf115"
    venv, dist = work / "venv", work / "dist"
    python = venv / "bin" / "python"
    if not _fresh_venv(pyenv_python("3.6"), venv, work / "venv.ok", "tensorflow-cpu 1.15.0\n"):
        run([python, "-m", "pip", "install", "-q", "pip>=19,<22"], env=pip_env())
        run([python, "-m", "pip", "install", "-q", "tensorflow-cpu==1.15.0", "protobuf<4", "numpy<1.19", "h5py<3",
             "gast==0.2.2"], env=pip_env())
        (work / "venv.ok").write_text("tensorflow-cpu 1.15.0\n")
    run(["rm", "-rf", dist])
    env = {**pip_env(), "PERSEUS_RELEASE": "1.5.0", "CMAKE_BUILD_PARALLEL_LEVEL": "2"}
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, REPO_ROOT / "native" / "runtime"], env=env)
    gloo = (REPO_ROOT / ".cache" / "gloo" / "prefix").read_text().strip()
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", dist,
         "-C", "build-dir=%s" % (REPO_ROOT / "native" / "build-tf115"), "-C", "wheel.py-api=py3",
         "-C", "cmake.define.PERSEUS_GLOO_PREFIX=%s" % gloo, REPO_ROOT / "native" / "bindings" / "tensorflow"],
        env={**env, "PERSEUS_TENSORFLOW_PYTHON": str(python)})
    run([python, "-m", "pip", "install", "-q", "--force-reinstall", one_wheel(str(dist / "perseus_common-*.whl"))],
        env=pip_env())
    run([python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall",
         one_wheel(str(dist / "perseus_tensorflow-*.whl"))], env=pip_env())
    return python


def tf214_cuda_wheels():
    """(binding, perseus_common) wheels of a built tensorflow-2.14.1/cuda11.8 cell under build/cuda-dist, or None."""
    bindings = sorted(glob.glob(str(CUDA_DIST / "*" / "cuda118" / "perseus_tensorflow-*+2.14.1-*.whl")))
    commons = sorted(glob.glob(str(CUDA_DIST / "*" / "perseus_common-*.whl")))
    if not bindings or not commons:
        return None
    return Path(bindings[-1]), Path(commons[-1])


def tf214_cuda_python(binding: Path, common: Path) -> Path:
    """The Python of a venv with TensorFlow's CUDA build 2.14.1 (`tensorflow`, not -cpu; it imports without a
    driver) and the CUDA cell's wheels; uv with the build tool's cache, which the cell's own test filled."""
    work = BUILD / "tf214-cuda"
    venv = work / "venv-py311"
    stamp = "%s %s %s\n" % (binding.name, binding.stat().st_mtime, common.stat().st_mtime)
    if not _fresh_venv(pyenv_python("3.11"), venv, work / "venv-py311.ok", stamp):
        uv = [TOOL_BIN / "uv", "pip", "install", "--python", venv / "bin" / "python"]
        env = {**pip_env(), "UV_CACHE_DIR": str(REPO_ROOT / ".cache" / "aiacc-build" / "uv")}
        run(uv + ["tensorflow==2.14.1", "numpy<2", str(common)], env=env)
        run(uv + ["--no-deps", "--reinstall", str(binding)], env=env)
        (work / "venv-py311.ok").write_text(stamp)
    return venv / "bin" / "python"

