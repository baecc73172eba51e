"""A framework binding's wheel (native/bindings/<framework>, scikit-build-core), built in the cell's
isolated build environment against the exact framework build and the prebuilt core.

The CMake build tree persists in a cache workspace keyed by everything but the binding's own sources,
so a change to one binding source recompiles only what ninja finds out of date.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomllib

from ..model import Cell
from .cache import BuildCache
from .core import CoreBuild
from .envs import Venv, run_uv
from .toolchain import Toolchain


class BindingBuildError(RuntimeError):
    pass


@dataclass(frozen=True)
class BindingSpec:
    source: Path
    name: str
    build_requires: tuple[str, ...]

    def library_path(self, env: Venv) -> list[Path]:
        """Where the framework's shared libraries lie in an env (auditwheel must see them to judge the rest)."""
        return [p for p in (env.site_packages / "torch" / "lib",) if p.is_dir()]


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


def config_settings(core: CoreBuild, build_dir: Path, build_type: str, toolchain: Toolchain) -> list[str]:
    """scikit-build-core settings: the persistent build tree, the prebuilt core, the compilers."""
    settings = [
        f"build-dir={build_dir}",
        f"cmake.build-type={build_type}",
        f"cmake.define.PERSEUS_CORE_PREFIX={core.prefix}",
        f"cmake.define.CMAKE_CXX_COMPILER={toolchain.cxx}",
    ]
    if toolchain.cuda is not None:
        settings += [f"cmake.define.CMAKE_CUDA_COMPILER={toolchain.cuda.nvcc}", "cmake.define.PERSEUS_WITH_CUDA=ON"]
    else:
        settings.append("cmake.define.PERSEUS_WITH_CUDA=OFF")
    return settings


def build_environment(cell: Cell, jobs: int) -> dict[str, str]:
    """The binding's metadata provider reads the release from PERSEUS_RELEASE (version `<release>+<torch>`)."""
    return {"PERSEUS_RELEASE": cell.release_version, "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs)}


def build_binding(
    cell: Cell,
    spec: BindingSpec,
    env: Venv,
    core: CoreBuild,
    toolchain: Toolchain,
    build_type: str,
    cache: BuildCache,
    out_dir: Path,
    jobs: int,
) -> Path:
    """Build the binding wheel of `cell` into out_dir; returns the (unrepaired) wheel."""
    workspace_inputs = {
        "source": str(spec.source.resolve()),  # CMake trees remember their source directory
        "python": str(env.python),
        "core": core.key,
        "toolchain": toolchain.identity,
        "build_type": build_type,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    with cache.workspace("binding-build", cache.key("binding-build", workspace_inputs)) as build_dir:
        args = ["build", "--wheel", "--no-build-isolation", "--python", str(env.python), "--out-dir", str(out_dir)]
        for setting in config_settings(core, build_dir, build_type, toolchain):
            args += ["-C", setting]
        log = build_dir / "last-build.log"
        log.write_text("")
        run_uv([*args, str(spec.source)], cache, log=log, extra_env=build_environment(cell, jobs))
    wheels = sorted(out_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise BindingBuildError(f"building {spec.source} left {len(wheels)} wheels in {out_dir}")
    return wheels[0]
