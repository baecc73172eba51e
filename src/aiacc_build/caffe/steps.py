"""The steps of `aiacc-build caffe build`: Debian build dependencies (dev/lib.sh's apt_install), Gloo
(recipes/gloo/build.sh), libperseus-caffe (CMake, installed into the build cache), then the Caffe recipe
(fetch + check the source, apply the patches, CPU_ONLY build with ccache; a no-op when nothing changed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass

from ..adapters.base import native_binding_dir
from ..errors import BuildError
from ..paths import NATIVE_DIR, REPO_ROOT

RECIPE = REPO_ROOT / "recipes" / "caffe" / "build.sh"
PATCH_DIR = REPO_ROOT / "recipes" / "caffe" / "patches" / "bvlc_caffe"
BINDING_DIR = native_binding_dir(NATIVE_DIR, "caffe")
CACHE_DIR = REPO_ROOT / ".cache" / "caffe"
# Debian bookworm packages Caffe's CPU_ONLY build needs (BLAS=open, OpenCV, HDF5; no LevelDB/LMDB/Python)
DEBIAN_BUILD_DEPS = (
    "cmake", "ninja-build", "g++", "git", "ccache", "xz-utils", "patch", "debian-archive-keyring",
    "libprotobuf-dev", "protobuf-compiler", "libgoogle-glog-dev", "libgflags-dev", "libhdf5-dev",
    "libboost-system-dev", "libboost-thread-dev", "libboost-filesystem-dev", "libopenblas-dev", "libopencv-dev",
)  # (the MPI bootstrap plugins' headers come from recipes/mpi/fetch.sh, not from these)


@dataclass(frozen=True)
class StepResult:
    name: str
    seconds: float
    output: str  # the last line the step printed (a path, for most)


def _run(name: str, args: list[str], env: dict[str, str] | None = None) -> StepResult:
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise BuildError(f"caffe build step '{name}' failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    lines = proc.stdout.strip().splitlines()
    return StepResult(name, time.perf_counter() - start, lines[-1] if lines else "")


def install_deps() -> StepResult:
    return _run("debian-deps", ["bash", "-c", 'source dev/lib.sh && apt_install "$@"', "apt_install", *DEBIAN_BUILD_DEPS])


def gloo() -> StepResult:
    return _run("gloo", ["bash", str(REPO_ROOT / "recipes" / "gloo" / "build.sh")])


def library(release: str, gloo_prefix: str, jobs: int) -> StepResult:
    """libperseus-caffe built and installed into .cache/caffe/perseus-caffe-<release>/install."""
    build = CACHE_DIR / f"perseus-caffe-{release}" / "build"
    prefix = CACHE_DIR / f"perseus-caffe-{release}" / "install"
    start = time.perf_counter()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    _run("libperseus-caffe (configure)", ["cmake", "-S", str(BINDING_DIR), "-B", str(build), *generator,
                                          "-DCMAKE_BUILD_TYPE=Release", f"-DPERSEUS_RELEASE={release}",
                                          f"-DPERSEUS_GLOO_PREFIX={gloo_prefix}"])
    _run("libperseus-caffe (build)", ["cmake", "--build", str(build), "-j", str(jobs)])
    _run("libperseus-caffe (install)", ["cmake", "--install", str(build), "--prefix", str(prefix)])
    return StepResult("libperseus-caffe", time.perf_counter() - start, str(prefix))


def caffe(library_prefix: str, jobs: int, patches: str = "1 2 3") -> StepResult:
    env = dict(os.environ, PERSEUS_CAFFE_PREFIX=library_prefix, CAFFE_JOBS=str(jobs), CAFFE_PATCHES=patches)
    return _run("caffe", ["bash", str(RECIPE), "build"], env=env)


def cudnn_layer(build_dir: str) -> StepResult:
    """Patch 2's cuDNN layer compiled alone with nvcc (recipes/caffe/build.sh cudnn-layer); exit 3: no nvcc."""
    start = time.perf_counter()
    proc = subprocess.run(["bash", str(RECIPE), "cudnn-layer", build_dir], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode == 3:
        return StepResult("cudnn-layer", time.perf_counter() - start, "skipped: no nvcc here")
    if proc.returncode != 0:
        raise BuildError(f"caffe build step 'cudnn-layer' failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return StepResult("cudnn-layer", time.perf_counter() - start, proc.stdout.strip().splitlines()[-1])


def source() -> StepResult:
    return _run("caffe source", ["bash", str(RECIPE), "source"])

