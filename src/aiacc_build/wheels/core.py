"""The native core (native/core): built once per (toolkit, compiler, build type, release).

Two backends give the same result, the installed CMake package `perseus_core` (target perseus::core)
that every binding of that toolkit links statically (PERSEUS_CORE_PREFIX=<entry>/install):
  - conan: when the checkout ships the recipe (recipes/perseus-core beside native/) and conan 2 is
    installed, `conan create` builds it offline (-nr: no remote) into a conan home inside this cache;
  - cmake: otherwise, CMake configure + build + install of native/core directly.
The release is an input because the core reports it (PERSEUS_RELEASE) and the binding requires the
core of exactly its release.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from .cache import BuildCache
from .compiler_cache import compiler_cache_env
from .toolchain import Toolchain
from ..errors import BuildError

CORE_SUBDIR = "core"
RECIPE = Path("recipes") / "perseus-core"  # relative to the checkout holding native/
# The core's GoogleTest suite is never compiled into a wheel (PERSEUS_BUILD_TESTS=OFF): not an input.
NOT_INPUTS = frozenset({"tests"})

Digest = Callable[[Path, frozenset[str]], str]


class CoreBuildError(BuildError):
    pass


@dataclass(frozen=True)
class CoreBuild:
    key: str
    prefix: Path  # install prefix holding lib/cmake/perseus_core
    reused: bool
    seconds: float
    toolchain: str
    backend: str  # "conan" or "cmake"


def core_source(native_dir: Path) -> Path:
    return native_dir / CORE_SUBDIR


def core_recipe(native_dir: Path) -> Path | None:
    """The conan recipe that builds this native/ tree's core, if conan can run it here."""
    recipe = native_dir.parent / RECIPE
    if (recipe / "conanfile.py").is_file() and importlib.util.find_spec("conans") is not None:
        return recipe
    return None


def core_key_inputs(
    native_dir: Path, toolchain: Toolchain, build_type: str, release: str, digest: Digest
) -> dict[str, object]:
    recipe = core_recipe(native_dir)
    return {
        "sources": digest(core_source(native_dir), NOT_INPUTS),
        "backend": "conan" if recipe else "cmake",
        "recipe": digest(recipe, frozenset()) if recipe else None,
        "toolchain": toolchain.identity,
        "build_type": build_type,
        "release": release,
        "cuda": toolchain.cuda.cuda if toolchain.cuda else None,
    }


def _run(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-30:])
        raise CoreBuildError(f"core build step failed: {' '.join(cmd[:4])} ... (log {log}):\n{tail}")
    return proc.stdout


def _check_package(prefix: Path) -> None:
    if not list(prefix.glob("lib*/cmake/perseus_core/perseus_coreConfig.cmake")):
        raise CoreBuildError(f"the core build installed no CMake package perseus_core under {prefix}")


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
        # CUDAToolkit_ROOT: FindCUDAToolkit takes the libraries of this toolkit, never /usr/local/cuda's
        args += [
            "-DPERSEUS_WITH_CUDA=ON",
            f"-DCMAKE_CUDA_COMPILER={toolchain.cuda.nvcc}",
            f"-DCUDAToolkit_ROOT={toolchain.cuda.root}",
        ]
        if toolchain.cuda_host_compiler is not None:
            args.append(f"-DCMAKE_CUDA_HOST_COMPILER={toolchain.cuda_host_compiler}")
    else:
        args += ["-DPERSEUS_WITH_CUDA=OFF"]
    return args


def _build_with_cmake(
    source: Path, path: Path, toolchain: Toolchain, build_type: str, release: str, jobs: int, extra_env: dict[str, str]
) -> None:
    log = path / "build.log"
    build, prefix = path / "build", path / "install"
    env = {**os.environ, **extra_env}
    _run(configure_args(source, build, prefix, toolchain, build_type, release), log, env)
    _run([str(toolchain.cmake), "--build", str(build), "--parallel", str(jobs)], log, env)
    _run([str(toolchain.cmake), "--install", str(build)], log, env)
    shutil.rmtree(build)  # objects are not needed once the static library is installed


def conan_args(recipe: Path, toolchain: Toolchain, build_type: str, release: str, jobs: int) -> list[str]:
    compilers = {"cpp": str(toolchain.cxx)}
    args = [
        "create", str(recipe), "--version", release, "--build=missing", "-nr", "--format=json",
        "-o", f"&:cuda={toolchain.cuda.cuda if toolchain.cuda else 'none'}",
        "-s", f"build_type={build_type}",
        "-c", "tools.cmake.cmaketoolchain:generator=Ninja",
        "-c", f"tools.build:jobs={jobs}",
        "-c", f"tools.build:compiler_executables={json.dumps(compilers)}",
    ]  # fmt: skip
    if toolchain.cuda is not None:
        args += ["-c", f"user.perseus:nvcc={toolchain.cuda.nvcc}"]
        if toolchain.cuda_host_compiler is not None:
            args += ["-c", f"user.perseus:cuda_host_compiler={toolchain.cuda_host_compiler}"]
    return args


def _build_with_conan(
    recipe: Path,
    path: Path,
    home: Path,
    toolchain: Toolchain,
    build_type: str,
    release: str,
    jobs: int,
    extra_env: dict[str, str],
) -> None:
    log = path / "build.log"
    conan = [sys.executable, "-m", "conans.conan"]
    env = dict(os.environ, CONAN_HOME=str(home), **extra_env)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(str(home) + ".lock"):  # one conan process per home at a time
        if not (home / "profiles" / "default").is_file():
            _run([*conan, "profile", "detect"], log, env)
        graph = json.loads(_run([*conan, *conan_args(recipe, toolchain, build_type, release, jobs)], log, env))
    folders = [n.get("package_folder") for n in graph["graph"]["nodes"].values() if n.get("name") == "perseus-core"]
    if len(folders) != 1 or not folders[0]:
        raise CoreBuildError(f"conan create of {recipe} reported no perseus-core package folder (log {log})")
    shutil.copytree(folders[0], path / "install")  # the entry holds its own copy: conan's cache may be pruned


def build_core(
    native_dir: Path, toolchain: Toolchain, build_type: str, release: str, cache: BuildCache, jobs: int, digest: Digest
) -> CoreBuild:
    source = core_source(native_dir)
    if not (source / "CMakeLists.txt").is_file():
        raise CoreBuildError(f"no native core at {source} (CMakeLists.txt missing)")
    recipe = core_recipe(native_dir)
    inputs = core_key_inputs(native_dir, toolchain, build_type, release, digest)
    started = time.perf_counter()

    def make(path: Path, meta: dict[str, object]) -> None:
        if recipe is not None:
            home = cache.root / "conan-home" if cache.enabled else path / "conan-home"
            _build_with_conan(recipe, path, home, toolchain, build_type, release, jobs, compiler_cache_env(cache))
        else:
            _build_with_cmake(source, path, toolchain, build_type, release, jobs, compiler_cache_env(cache))
        _check_package(path / "install")
        meta.update(toolchain=toolchain.label, backend="conan" if recipe else "cmake")

    entry = cache.ensure("core", inputs, make)
    return CoreBuild(
        key=entry.key,
        prefix=entry.path / "install",
        reused=entry.hit,
        seconds=time.perf_counter() - started,
        toolchain=toolchain.label,
        backend=str(entry.meta.get("backend", "cmake")),
    )
