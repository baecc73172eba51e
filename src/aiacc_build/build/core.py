"""The native core (native/core, CMake): built once per (toolkit, compiler, build type, release).

The core is framework-agnostic; every binding of the same toolkit links the same static library, found
as the installed CMake package `perseus_core` (CMAKE_PREFIX_PATH=<entry>/install). The release is an
input because the core reports it (PERSEUS_RELEASE).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .cache import BuildCache
from .toolchain import Toolchain

CORE_SUBDIR = "core"
# The core's GoogleTest suite is never compiled into a wheel (PERSEUS_BUILD_TESTS=OFF): not an input.
NOT_INPUTS = frozenset({"tests"})

Digest = Callable[[Path, frozenset[str]], str]


class CoreBuildError(RuntimeError):
    pass


@dataclass(frozen=True)
class CoreBuild:
    key: str
    prefix: Path  # install prefix holding lib/cmake/perseus_core
    reused: bool
    seconds: float
    toolchain: str


def core_source(native_dir: Path) -> Path:
    return native_dir / CORE_SUBDIR


def core_key_inputs(
    native_dir: Path, toolchain: Toolchain, build_type: str, release: str, digest: Digest
) -> dict[str, object]:
    return {
        "sources": digest(core_source(native_dir), NOT_INPUTS),
        "toolchain": toolchain.identity,
        "build_type": build_type,
        "release": release,
        "cuda": toolchain.cuda.cuda if toolchain.cuda else None,
    }


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-30:])
        raise CoreBuildError(f"core build step failed: {' '.join(cmd[:4])} ... (log {log}):\n{tail}")


def configure_args(
    source: Path, build: Path, prefix: Path, toolchain: Toolchain, build_type: str, release: str
) -> list[str]:
    args = [
        str(toolchain.cmake),
        "-S",
        str(source),
        "-B",
        str(build),
        "-G",
        "Ninja",
        f"-DCMAKE_BUILD_TYPE={build_type}",
        f"-DCMAKE_INSTALL_PREFIX={prefix}",
        f"-DCMAKE_CXX_COMPILER={toolchain.cxx}",
        f"-DPERSEUS_RELEASE={release}",
        "-DPERSEUS_BUILD_TESTS=OFF",
    ]
    if toolchain.cuda is not None:
        args += ["-DPERSEUS_WITH_CUDA=ON", f"-DCMAKE_CUDA_COMPILER={toolchain.cuda.nvcc}"]
    else:
        args += ["-DPERSEUS_WITH_CUDA=OFF"]
    return args


def _bridge_export_name(package: Path) -> bool:
    """Bindings link `perseus::core`; native/core exports its target as `perseus::perseus_core` (its
    install(EXPORT) lacks EXPORT_NAME core). Until that is fixed there, give the installed package the
    alias the bindings use. Returns True when the alias had to be added.
    """
    targets = (package / "perseus_coreTargets.cmake").read_text()
    if "add_library(perseus::core " in targets or "add_library(perseus::perseus_core " not in targets:
        return False
    config = package / "perseus_coreConfig.cmake"
    config.write_text(
        config.read_text() + "\n# added by aiacc-build: the name the bindings link\n"
        "if(NOT TARGET perseus::core)\n  add_library(perseus::core ALIAS perseus::perseus_core)\nendif()\n"
    )
    return True


def build_core(
    native_dir: Path, toolchain: Toolchain, build_type: str, release: str, cache: BuildCache, jobs: int, digest: Digest
) -> CoreBuild:
    source = core_source(native_dir)
    if not (source / "CMakeLists.txt").is_file():
        raise CoreBuildError(f"no native core at {source} (CMakeLists.txt missing)")
    inputs = core_key_inputs(native_dir, toolchain, build_type, release, digest)
    started = time.perf_counter()

    def make(path: Path, meta: dict[str, object]) -> None:
        log = path / "build.log"
        build, prefix = path / "build", path / "install"
        _run(configure_args(source, build, prefix, toolchain, build_type, release), log)
        _run([str(toolchain.cmake), "--build", str(build), "--parallel", str(jobs)], log)
        _run([str(toolchain.cmake), "--install", str(build)], log)
        shutil.rmtree(build)  # objects are not needed once the static library is installed
        packages = list(prefix.glob("lib*/cmake/perseus_core"))
        if not packages:
            raise CoreBuildError(f"the core installed no CMake package under {prefix}")
        meta["alias_added"] = _bridge_export_name(packages[0])
        meta["toolchain"] = toolchain.label

    entry = cache.ensure("core", inputs, make)
    return CoreBuild(
        key=entry.key,
        prefix=entry.path / "install",
        reused=entry.hit,
        seconds=time.perf_counter() - started,
        toolchain=toolchain.label,
    )
