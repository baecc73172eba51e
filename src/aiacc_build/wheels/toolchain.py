"""What this machine can build with: Python interpreters, C++ compiler, CMake, CUDA compilers.

CUDA compilers are real toolkits only: /usr/local/cuda-X.Y, and toolkits provisioned from Debian into
the build cache by `aiacc-build toolkit fetch` (src/aiacc_build/toolkits/), which are driven with the build's own C++
compiler as nvcc's host compiler. Each probe runs once per process. The identities found here enter cache keys, so a compiler upgrade
rebuilds everything it compiled and nothing else.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..toolkits import TOOLKITS, host_compiler_problem, installed_toolkits, nvcc_release
from ..errors import HostServiceError

PYENV_ROOT = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv"))
# Real toolkits only: the pip cu11/cu12 "nvcc" packages hold no compiler, so they are never probed.
CUDA_ROOTS = (Path("/usr/local"),)


@dataclass(frozen=True)
class Interpreter:
    python: str  # "3.11"
    version: str  # "3.11.7"
    executable: Path


@dataclass(frozen=True)
class CudaCompiler:
    cuda: str  # "13.0"
    version: str  # "13.0.88"
    nvcc: Path
    # A provisioned toolkit has no host compiler of its own: the build passes its C++ compiler to nvcc,
    # which must be a GCC no newer than this. None: nvcc picks its host compiler itself (/usr/local).
    max_host_gcc: int | None = None

    @property
    def root(self) -> Path:
        return self.nvcc.parent.parent


@dataclass(frozen=True)
class Toolchain:
    """The compilers and tools one native build uses; its `identity` is part of every cache key."""

    cxx: Path
    cxx_version: str  # first line of `c++ --version`
    cmake: Path
    cmake_version: str
    ninja_version: str
    arch: str
    cuda: CudaCompiler | None

    @property
    def cuda_host_compiler(self) -> Path | None:
        """The host compiler passed to nvcc explicitly (CMAKE_CUDA_HOST_COMPILER), if any."""
        return self.cxx if self.cuda is not None and self.cuda.max_host_gcc is not None else None

    @property
    def identity(self) -> dict[str, str | None]:
        return {
            "cxx": str(self.cxx),
            "cxx_version": self.cxx_version,
            "cmake_version": self.cmake_version,
            "ninja_version": self.ninja_version,
            "arch": self.arch,
            "nvcc": self.cuda.version if self.cuda else None,
        }

    @property
    def label(self) -> str:
        accel = f"nvcc {self.cuda.version}" if self.cuda else "cpu"
        return f"{self.cxx_version} / cmake {self.cmake_version} / {accel}"


class ToolMissingError(HostServiceError):
    pass


def machine_arch() -> str:
    return platform.machine()


@functools.cache
def find_interpreter(python: str) -> Interpreter | None:
    """The pyenv interpreter of a minor version ("3.11"), the newest patch release if several."""
    candidates = []
    if PYENV_ROOT.is_dir():
        for entry in PYENV_ROOT.joinpath("versions").iterdir():
            match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", entry.name)
            exe = entry / "bin" / f"python{python}"
            if match and f"{match[1]}.{match[2]}" == python and exe.is_file():
                candidates.append((tuple(int(g) for g in match.groups()), entry.name, exe))
    if not candidates:
        return None
    _, version, exe = max(candidates)
    return Interpreter(python=python, version=version, executable=exe)


# The binding's build backend (scikit-build-core) runs on CPython >= 3.7. A cell for an older Python
# (1.5.0's cp36 cells) is built by a newer interpreter driving the same CMake project against the
# framework installed for the cell's Python (see binding.py); the wheel is re-tagged for the cell.
BACKEND_MIN_PYTHON = (3, 7)


def backend_interpreter(target: Interpreter) -> Interpreter:
    """The interpreter that runs the build backend for a cell built for `target`: `target` itself when
    the backend runs there, else this tool's own Python version (its pyenv interpreter, or this one)."""
    if tuple(int(p) for p in target.python.split(".")) >= BACKEND_MIN_PYTHON:
        return target
    own = f"{sys.version_info.major}.{sys.version_info.minor}"
    return find_interpreter(own) or Interpreter(
        python=own, version=platform.python_version(), executable=Path(sys.executable)
    )


def _first_line(cmd: list[str]) -> str:
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return out.strip().splitlines()[0]


@functools.cache
def cuda_compilers() -> tuple[CudaCompiler, ...]:
    """Every real nvcc, one per CUDA version: /usr/local/cuda-X.Y (and /usr/local/cuda) first, then the
    toolkits provisioned into the build cache."""
    found: dict[str, CudaCompiler] = {}
    for root in CUDA_ROOTS:
        if not root.is_dir():
            continue
        for toolkit in sorted(root.glob("cuda*")):
            nvcc = toolkit / "bin" / "nvcc"
            release = nvcc_release(nvcc) if nvcc.is_file() else None
            if release and release[0] not in found:
                found[release[0]] = CudaCompiler(cuda=release[0], version=release[1], nvcc=nvcc.resolve())
    for provisioned in installed_toolkits():
        release = nvcc_release(provisioned.nvcc)
        if release and release[0] == provisioned.cuda and release[0] not in found:
            found[release[0]] = CudaCompiler(
                cuda=release[0], version=release[1], nvcc=provisioned.nvcc.resolve(), max_host_gcc=provisioned.max_host_gcc
            )
    return tuple(found.values())


def find_cuda_compiler(cuda: str) -> CudaCompiler | None:
    """The real nvcc of exactly this CUDA major.minor: a cell is never compiled with another toolkit."""
    return next((c for c in cuda_compilers() if c.cuda == cuda), None)


@functools.cache
def _host_tools() -> tuple[Path, str, Path, str, str]:
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    cmake = shutil.which("cmake")
    ninja = shutil.which("ninja")
    missing = [name for name, path in (("a C++ compiler (c++)", cxx), ("cmake", cmake), ("ninja", ninja)) if not path]
    if missing:
        raise ToolMissingError(
            f"not found on PATH: {', '.join(missing)}; install them (Debian: apt-get install g++ cmake ninja-build)"
        )
    assert cxx and cmake and ninja
    cmake_version = _first_line([cmake, "--version"]).split()[-1]
    return (
        Path(cxx).resolve(),
        _first_line([cxx, "--version"]),
        Path(cmake),
        cmake_version,
        _first_line([ninja, "--version"]),
    )


def detect_toolchain(cuda: str | None) -> Toolchain:
    """The toolchain for a CPU build (cuda=None) or a CUDA build with exactly that toolkit."""
    cxx, cxx_version, cmake, cmake_version, ninja_version = _host_tools()
    compiler = None
    if cuda is not None:
        compiler = find_cuda_compiler(cuda)
        if compiler is None:
            have = ", ".join(c.cuda for c in cuda_compilers()) or "none"
            fetch = f"; run `aiacc-build toolkit fetch {cuda}`" if cuda in TOOLKITS else ""
            raise ToolMissingError(f"no real nvcc for CUDA {cuda} on this machine (found: {have}){fetch}")
        if compiler.max_host_gcc is not None:
            problem = host_compiler_problem(cxx, compiler.max_host_gcc)
            if problem:
                raise ToolMissingError(f"nvcc {compiler.version}: {problem}")
    return Toolchain(
        cxx=cxx,
        cxx_version=cxx_version,
        cmake=cmake,
        cmake_version=cmake_version,
        ninja_version=ninja_version,
        arch=machine_arch(),
        cuda=compiler,
    )
