"""The post-build test: install a cell's wheel into a FRESH environment that holds exactly its framework
build, import the binding and run one real op.

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
from importlib import resources
from pathlib import Path

from ..model import Cell, Framework
from .cache import BuildCache
from .common import CommonWheel
from .envs import create_venv, framework_requirement, install, uv_version
from .frameworks import FrameworkArtifact
from .hashing import inputs_key
from .toolchain import Interpreter

# One check script per framework, run by the test environment's interpreter (so it stays 3.6-compatible).
CHECK_SCRIPTS = {Framework.TORCH: "check_torch.py"}


class SmokeTestError(RuntimeError):
    pass


@dataclass(frozen=True)
class SmokeResult:
    description: str
    output: str
    reused: bool


def check_script(framework: Framework) -> str:
    name = CHECK_SCRIPTS.get(framework)
    if name is None:
        raise SmokeTestError(f"not supported: no post-build test for {framework.value} wheels yet")
    return resources.files("aiacc_build.build.checks").joinpath(name).read_text()


def smoke_test(
    cell: Cell,
    wheel: Path,
    wheel_sha256: str,
    common: CommonWheel,
    interpreter: Interpreter,
    framework: FrameworkArtifact,
    cache: BuildCache,
) -> SmokeResult:
    script = check_script(cell.framework)
    inputs = {
        "wheel": wheel_sha256,
        "common": common.sha256,
        "framework": framework.identity,
        "python": interpreter.version,
        "script": inputs_key("script", {"text": script, "output": "stdout"}),
        "uv": uv_version(),
        "env": "seeded",  # pip/setuptools in the test env, as in `python -m venv`
    }
    description = (
        f"fresh {interpreter.version} venv + {framework.filename} + {common.path.name}: "
        f"import perseus.{cell.framework.value}, one compression op"
    )

    def run(path: Path, meta: dict[str, object]) -> None:
        meta["output"] = _run_in_fresh_env(cell, wheel, common, interpreter, framework, cache, script)

    entry = cache.ensure("smoke", inputs, run)
    return SmokeResult(description=description, output=str(entry.meta["output"]), reused=entry.hit)


def _run_in_fresh_env(
    cell: Cell,
    wheel: Path,
    common: CommonWheel,
    interpreter: Interpreter,
    framework: FrameworkArtifact,
    cache: BuildCache,
    script: str,
) -> str:
    workdir = Path(tempfile.mkdtemp(prefix="aiacc-smoke-"))
    try:
        links = workdir / "wheels"
        links.mkdir()
        shutil.copyfile(common.path, links / common.path.name)
        shutil.copyfile(wheel, links / wheel.name)
        venv = create_venv(workdir / "venv", interpreter, cache, seed=True)  # like a user's fresh venv
        # perseus-common by its file: its own dependencies (dataclasses on 3.6) come from the indexes
        install(venv, [framework_requirement(framework), str(links / common.path.name)], cache)
        # the cell's wheel from the local folder only: its perseus-common==<release> must be met there
        install(venv, [str(links / wheel.name)], cache, no_index=True, find_links=[links])
        check = workdir / "check.py"
        check.write_text(script)
        proc = subprocess.run(
            [str(venv.python), str(check), cell.release_version, cell.framework_version],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            output = (proc.stdout + proc.stderr).strip()
            raise SmokeTestError(f"post-build test of {wheel.name} failed (exit {proc.returncode}):\n{output[-3000:]}")
        return proc.stdout.strip()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
