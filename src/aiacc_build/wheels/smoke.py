"""The post-build test: install a cell's wheel into a FRESH environment that holds exactly its framework
build and run the self-test the wheel ships (`python -m perseus.<framework>._selftest`, the same
check the CI test command and the install script run).

The environment is new for every test (a temporary directory, removed afterwards) and made like a
user's `python -m venv` (pip, and setuptools below Python 3.12: torch 1.10 imports pkg_resources
without declaring it). Only the framework file, perseus-common (by its file, with its own
dependencies) and the cell's wheel go in, the wheel from a local folder with --no-index, so its
`perseus-common==<release>` requirement must be met by the release's perseus-common. A passing test
is remembered in the cache under the digests of everything it installed.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..model import Cell
from .cache import BuildCache
from .common import CommonWheel
from .envs import create_venv, framework_requirements, install, uv_version
from .frameworks import FrameworkArtifact
from ..hashing import inputs_key
from .steps import selftest_args
from .toolchain import Interpreter
from ..errors import BuildError


SELFTEST_TIMEOUT_S = 600


class SmokeTestError(BuildError):
    pass


@dataclass(frozen=True)
class SmokeResult:
    description: str
    output: str
    reused: bool


def combined(results: list[SmokeResult]) -> SmokeResult:
    """Tests of one wheel under several Pythons as one result: every description, every output."""
    if len(results) == 1:
        return results[0]
    return SmokeResult(
        description="; ".join(r.description for r in results),
        output="\n".join(r.output for r in results),
        reused=all(r.reused for r in results),
    )


def selftest_command(cell: Cell) -> list[str]:
    """The arguments after the interpreter: `-m perseus.torch._selftest <release> <framework version>`."""
    return selftest_args(cell)


def smoke_test(
    cell: Cell,
    wheel: Path,
    wheel_sha256: str,
    common: CommonWheel,
    interpreter: Interpreter,
    framework: FrameworkArtifact,
    cache: BuildCache,
) -> SmokeResult:
    command = selftest_command(cell)
    inputs = {
        "wheel": wheel_sha256,
        "common": common.sha256,
        "framework": framework.identity,
        "python": interpreter.version,
        "selftest": inputs_key("selftest", {"command": command, "output": "stdout"}),
        "uv": uv_version(),
        "env": "seeded",  # pip/setuptools in the test env, as in `python -m venv`
    }
    description = (
        f"fresh {interpreter.version} venv + {framework.filename} + {common.path.name}: "
        f"python {' '.join(command)}"
    )

    def run(path: Path, meta: dict[str, object]) -> None:
        meta["output"] = _run_in_fresh_env(cell, wheel, common, interpreter, framework, cache, command)

    entry = cache.ensure("smoke", inputs, run)
    return SmokeResult(description=description, output=str(entry.meta["output"]), reused=entry.hit)


def _run_in_fresh_env(
    cell: Cell,
    wheel: Path,
    common: CommonWheel,
    interpreter: Interpreter,
    framework: FrameworkArtifact,
    cache: BuildCache,
    command: list[str],
) -> str:
    workdir = Path(tempfile.mkdtemp(prefix="aiacc-smoke-"))
    try:
        links = workdir / "wheels"
        links.mkdir()
        shutil.copyfile(common.path, links / common.path.name)
        shutil.copyfile(wheel, links / wheel.name)
        venv = create_venv(workdir / "venv", interpreter, cache, seed=True)  # like a user's fresh venv
        # perseus-common by its file: its own dependencies (dataclasses on 3.6) come from the indexes
        install(venv, [*framework_requirements(framework), str(links / common.path.name)], cache)
        # the cell's wheel from the local folder only: its perseus-common==<release> must be met there
        install(venv, [str(links / wheel.name)], cache, no_index=True, find_links=[links])
        try:
            proc = subprocess.run(
                [str(venv.python), *command], cwd=workdir, capture_output=True, text=True, timeout=SELFTEST_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise SmokeTestError(f"post-build test of {wheel.name} ran longer than {SELFTEST_TIMEOUT_S} s") from None
        if proc.returncode != 0:
            output = (proc.stdout + proc.stderr).strip()
            raise SmokeTestError(f"post-build test of {wheel.name} failed (exit {proc.returncode}):\n{output[-3000:]}")
        return proc.stdout.strip()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
