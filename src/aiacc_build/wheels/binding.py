"""A framework binding's wheel (native/bindings/<framework>, scikit-build-core), built in the cell's
isolated build environment against the exact framework build and the prebuilt core.

The CMake build tree persists in a cache workspace keyed by everything but the binding's own sources,
so a change to one binding source recompiles only what ninja finds out of date.

A cell whose Python is older than scikit-build-core supports (cp36) is built by a newer interpreter
(the backend env: build requirements only) for the framework installed in the cell's own env: the
binding's build support reads the framework from the directory its adapter names (PERSEUS_TORCH_DIR) instead of importing anything, and
repair re-tags the wheel for the cell's Python.
The ops library is a torch extension that never links libpython, so the interpreter that ran CMake
leaves no trace in it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import tomllib

from ..adapters import all_adapters
from ..adapters.base import FrameworkAdapter
from ..model import Cell
from .cache import BuildCache
from .compiler_cache import compiler_cache_env
from .core import CoreBuild
from .envs import Venv, ensure_build_env, run_uv
from .frameworks import FrameworkArtifact
from .toolchain import Interpreter, Toolchain, backend_interpreter
from ..errors import BuildError


class BindingBuildError(BuildError):
    pass


@dataclass(frozen=True)
class BindingSpec:
    source: Path
    name: str
    build_requires: tuple[str, ...]

    @property
    def adapter(self) -> FrameworkAdapter:
        """The framework whose binding this is, known by the distribution it builds (`perseus_torch`)."""
        found = next((a for a in all_adapters() if a.binding_distribution == self.name), None)
        if found is None:
            raise BindingBuildError(
                f"{self.source}: project {self.name!r} is no framework's binding distribution "
                f"({', '.join(a.binding_distribution for a in all_adapters())})"
            )
        return found

    def framework_dir(self, env: Venv) -> Path:
        return self.adapter.framework_dir(env.site_packages)

    def library_path(self, env: Venv) -> list[Path]:
        """Where the framework's shared libraries lie in an env (auditwheel must see them to judge the rest)."""
        return self.adapter.library_dirs(env.site_packages)


@dataclass(frozen=True)
class BindingEnvs:
    framework: Venv  # the cell's Python with exactly its framework build (headers, libraries)
    backend: Venv | None  # None: the build backend runs in `framework` itself
    backend_python: str  # the interpreter version running the backend


def ensure_binding_envs(
    interpreter: Interpreter, artifact: FrameworkArtifact, spec: BindingSpec, cache: BuildCache
) -> BindingEnvs:
    """The cached env(s) a binding of this cell is built in (one, or two for a Python the backend lacks)."""
    backend = backend_interpreter(interpreter)
    if backend == interpreter:
        env, _ = ensure_build_env(interpreter, artifact, spec.build_requires, cache)
        return BindingEnvs(framework=env, backend=None, backend_python=interpreter.version)
    env, _ = ensure_build_env(interpreter, artifact, (), cache)
    tools, _ = ensure_build_env(backend, None, spec.build_requires, cache)
    return BindingEnvs(framework=env, backend=tools, backend_python=backend.version)


def read_binding_spec(source: Path) -> BindingSpec:
    pyproject = source / "pyproject.toml"
    if not pyproject.is_file():
        raise BindingBuildError(f"no binding project at {source} (pyproject.toml missing)")
    data = tomllib.loads(pyproject.read_text())
    requires = tuple(data.get("build-system", {}).get("requires", []))
    backend = data.get("build-system", {}).get("build-backend", "")
    if not backend.startswith("scikit_build_core"):
        raise BindingBuildError(f"{pyproject}: build-backend {backend!r} is not scikit-build-core")
    return BindingSpec(source=source, name=data["project"]["name"], build_requires=requires)


# The core's package inside the binding's build tree: every tree names it alike, so a compile that
# includes the core's header hashes the same in every tree (ccache, see compiler_cache.py).
CORE_IN_TREE = "perseus-core"


def core_in_tree(core: CoreBuild, build_dir: Path) -> Path:
    """The core's installed package, copied once into the build tree (it is small: headers, one archive)."""
    target = build_dir / CORE_IN_TREE
    if not (target / ".complete").is_file():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(core.prefix, target)
        (target / ".complete").write_text(core.key + "\n")
    return target


def config_settings(core_prefix: Path, build_dir: Path, build_type: str, toolchain: Toolchain) -> list[str]:
    """scikit-build-core settings: the persistent build tree, the prebuilt core, the compilers."""
    settings = [
        f"build-dir={build_dir}",
        f"cmake.build-type={build_type}",
        f"cmake.define.PERSEUS_CORE_PREFIX={core_prefix}",
        f"cmake.define.CMAKE_CXX_COMPILER={toolchain.cxx}",
    ]
    if toolchain.cuda is not None:
        # CUDAToolkit_ROOT: the core's package config finds CUDAToolkit before the CUDA language is on,
        # so without it FindCUDAToolkit could take /usr/local/cuda's runtime for another toolkit's kernels
        settings += [
            f"cmake.define.CMAKE_CUDA_COMPILER={toolchain.cuda.nvcc}",
            f"cmake.define.CUDAToolkit_ROOT={toolchain.cuda.root}",
            "cmake.define.PERSEUS_WITH_CUDA=ON",
        ]
        if toolchain.cuda_host_compiler is not None:
            settings.append(f"cmake.define.CMAKE_CUDA_HOST_COMPILER={toolchain.cuda_host_compiler}")
    else:
        settings.append("cmake.define.PERSEUS_WITH_CUDA=OFF")
    return settings


def build_environment(
    cell: Cell, jobs: int, spec: BindingSpec | None = None, envs: BindingEnvs | None = None
) -> dict[str, str]:
    """The binding's metadata provider reads the release from PERSEUS_RELEASE (version `<release>+<torch>`);
    a backend in another env is told where the framework is."""
    env = {"PERSEUS_RELEASE": cell.release_version, "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs)}
    if envs is not None and envs.backend is not None and spec is not None and cell.python is not None:
        env.update(spec.adapter.build_environment(envs.framework.site_packages))
    return env


def build_binding(
    cell: Cell,
    spec: BindingSpec,
    envs: BindingEnvs,
    core: CoreBuild,
    toolchain: Toolchain,
    build_type: str,
    cache: BuildCache,
    out_dir: Path,
    jobs: int,
) -> Path:
    """Build the binding wheel of `cell` into out_dir; returns the (unrepaired) wheel."""
    backend = envs.backend or envs.framework
    workspace_inputs = {
        "source": str(spec.source.resolve()),  # CMake trees remember their source directory
        "python": str(envs.framework.python),
        **({"backend_python": str(backend.python)} if envs.backend else {}),
        "core": core.key,
        "toolchain": toolchain.identity,
        "build_type": build_type,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    with cache.workspace("binding-build", cache.key("binding-build", workspace_inputs)) as build_dir:
        args = ["build", "--wheel", "--no-build-isolation", "--python", str(backend.python), "--out-dir", str(out_dir)]
        for setting in config_settings(core_in_tree(core, build_dir), build_dir, build_type, toolchain):
            args += ["-C", setting]
        log = build_dir / "last-build.log"
        log.write_text("")
        extra_env = {**build_environment(cell, jobs, spec, envs), **compiler_cache_env(cache)}
        run_uv([*args, str(spec.source)], cache, log=log, extra_env=extra_env)
    wheels = sorted(out_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise BindingBuildError(f"building {spec.source} left {len(wheels)} wheels in {out_dir}")
    return wheels[0]
