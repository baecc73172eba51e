"""Compiler probes: nvcc's release, the host compiler a toolkit accepts, and the one-kernel check."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .spec import CHECK_KERNEL, ToolkitBuildError, ToolkitHostError


def nvcc_release(nvcc: Path) -> tuple[str, str] | None:
    """(major.minor, full version) that `nvcc --version` reports, or None when it does not run."""
    try:
        text = subprocess.run([str(nvcc), "--version"], check=True, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)", text)
    return (match[1], match[2]) if match else None


def host_compiler(max_gcc: int) -> Path:
    """The C++ compiler nvcc drives ($CXX, else c++), checked against the newest GNU version it accepts."""
    name = os.environ.get("CXX", "c++")
    cxx = shutil.which(name)
    if cxx is None:
        raise ToolkitHostError(f"no C++ compiler {name} on PATH (apt-get install g++)")
    problem = host_compiler_problem(Path(cxx).resolve(), max_gcc)
    if problem:
        raise ToolkitHostError(problem)
    return Path(cxx).resolve()


def host_compiler_problem(cxx: Path, max_gcc: int) -> str | None:
    """Why nvcc would refuse `cxx` as its host compiler (a GNU compiler newer than it supports), or None."""
    try:
        version = subprocess.run([str(cxx), "-dumpfullversion", "-dumpversion"], capture_output=True, text=True)
        ident = subprocess.run([str(cxx), "--version"], capture_output=True, text=True).stdout
    except OSError as exc:
        return f"cannot run {cxx}: {exc}"
    if "clang" in ident.lower() or version.returncode != 0:
        return None  # nvcc judges other compilers itself
    major = int(version.stdout.strip().split(".")[0])
    if major > max_gcc:
        return f"{cxx} is GCC {major}; this nvcc accepts GCC up to {max_gcc}: set CXX=g++-{max_gcc}"
    return None


def check_toolkit(prefix: Path, cuda: str, cxx: Path) -> str:
    """Run the assembled toolkit: nvcc --version must say `cuda`, and one kernel must compile for sm_75
    and link against the static runtime. Returns nvcc's full version."""
    release = nvcc_release(prefix / "bin" / "nvcc")
    if release is None or release[0] != cuda:
        raise ToolkitBuildError(f"{prefix}/bin/nvcc --version does not report release {cuda} (got {release})")
    with tempfile.TemporaryDirectory(prefix="aiacc-nvcc-check-") as tmp:
        source = Path(tmp) / "check.cu"
        source.write_text(CHECK_KERNEL)
        cmd = [str(prefix / "bin" / "nvcc"), "-ccbin", str(cxx), "-arch=sm_75", "-cudart", "static",
               str(source), "-o", str(Path(tmp) / "check")]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolkitBuildError(f"the provisioned nvcc cannot compile and link a kernel: {proc.stderr[-800:]}")
    return release[1]

