"""Isolated Python environments, made with uv: build envs (cached) and fresh test envs (never reused).

uv links installed files from its own cache, so a fresh environment holding torch costs well under a
second after the first one (pip needs ~25 s to unpack the same wheel). With the build cache off, uv
runs with --no-cache too: every environment unpacks its wheels again.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from uv import find_uv_bin

from .cache import BuildCache
from .frameworks import FrameworkArtifact, local_index_dirs, local_wheel_dirs
from .toolchain import Interpreter
from ..errors import BuildError

SOURCE_DATE_EPOCH = "315532800"  # 1980-01-01, the earliest a zip archive can say


class EnvError(BuildError):
    pass


@dataclass(frozen=True)
class Venv:
    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        (found,) = self.path.glob("lib/python*/site-packages")
        return found


@functools.cache
def uv_version() -> str:
    return subprocess.run([find_uv_bin(), "--version"], check=True, capture_output=True, text=True).stdout.strip()


def uv_env(cache: BuildCache) -> dict[str, str]:
    env = dict(os.environ)
    env["UV_PYTHON_DOWNLOADS"] = "never"  # only this machine's interpreters
    env.pop("VIRTUAL_ENV", None)
    # Fixed archive timestamps: the same inputs give byte-identical wheels.
    env.setdefault("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
    if cache.enabled:
        env["UV_CACHE_DIR"] = str(cache.uv_cache)
    else:
        env["UV_NO_CACHE"] = "1"
    return env


def run_uv(
    args: Sequence[str],
    cache: BuildCache,
    cwd: Path | None = None,
    log: Path | None = None,
    extra_env: dict[str, str] | None = None,
) -> str:
    """Run uv; on failure raise EnvError with the command and the end of its output."""
    cmd = [find_uv_bin(), *args]
    env = {**uv_env(cache), **(extra_env or {})}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    if log is not None:
        with log.open("a") as fh:
            fh.write(f"$ {' '.join(map(str, cmd))}\n{output}\n")
    if proc.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-25:])
        raise EnvError(f"`uv {' '.join(map(str, args[:2]))}` failed (exit {proc.returncode}):\n{tail}")
    return output


def create_venv(
    path: Path, interpreter: Interpreter, cache: BuildCache, log: Path | None = None, seed: bool = False
) -> Venv:
    """seed: with pip (and setuptools below 3.12), as `python -m venv` makes it: a user's environment,
    where old frameworks find what they import undeclared (torch 1.10 imports pkg_resources)."""
    args = ["venv", "--quiet", *(["--seed"] if seed else []), "--python", str(interpreter.executable), str(path)]
    run_uv(args, cache, log=log)
    return Venv(path)


def install(
    venv: Venv,
    requirements: Sequence[str],
    cache: BuildCache,
    *,
    no_index: bool = False,
    find_links: Sequence[Path] = (),
    log: Path | None = None,
) -> None:
    """Install into `venv` from what pip here is configured with: its find-links and local (file://)
    indexes beside the default index, the best version across all of them (pip's own semantics).
    """
    args = ["pip", "install", "--quiet", "--python", str(venv.python)]
    for folder in [*find_links, *local_wheel_dirs()]:
        args += ["--find-links", str(folder)]
    if no_index:
        args.append("--no-index")
    else:
        for index in local_index_dirs():
            args += ["--extra-index-url", index.as_uri()]
        args += ["--index-strategy", "unsafe-best-match"]
    run_uv([*args, *requirements], cache, log=log)


def framework_requirement(artifact: FrameworkArtifact) -> str:
    """Install the exact file, by path or URL (with its digest when the registry gave one)."""
    if artifact.is_local:
        return artifact.location
    return f"{artifact.project} @ {artifact.location}" + (f"#sha256={artifact.sha256}" if artifact.sha256 else "")


def framework_requirements(artifact: FrameworkArtifact) -> list[str]:
    """The exact framework file and what its adapter installs next to it (numpy<1.24 for mxnet)."""
    from ..adapters import companion_requirements

    return [framework_requirement(artifact), *companion_requirements(artifact.project)]


def ensure_build_env(
    interpreter: Interpreter, artifact: FrameworkArtifact | None, build_requires: Sequence[str], cache: BuildCache
) -> tuple[Venv, bool]:
    """The cached build env of (interpreter, exact framework build, build requirements). Returns (env, reused).

    artifact None: an env of the build requirements alone (the backend env of a cell whose Python is
    older than the backend supports); no build_requires: the framework alone (that cell's own env).
    """
    inputs = {
        "python": interpreter.version,
        "executable": str(interpreter.executable),
        "framework": artifact.identity if artifact else None,
        "framework_requirements": framework_requirements(artifact) if artifact else [],
        "build_requires": sorted(build_requires),
        "uv": uv_version(),
    }
    requirements = [*(framework_requirements(artifact) if artifact else []), *build_requires]
    if not requirements:
        raise EnvError("a build env needs a framework or build requirements")

    def make(path: Path, meta: dict[str, object]) -> None:
        log = path.parent / f"{path.name}.log"
        log.write_text("")
        venv = create_venv(path / "venv", interpreter, cache, log)
        install(venv, requirements, cache, log=log)
        meta["framework"] = artifact.filename if artifact else None

    entry = cache.ensure("build-env", inputs, make)
    return Venv(entry.path / "venv"), entry.hit
