"""`aiacc-build wheel ...`: the build steps a CI job calls (inside its builder image) and the local
driver runs in-process: perseus-common for a release, repair + re-tag of a built wheel, the in-wheel
self-test. Exit codes as for every command (`aiacc-build --help`); --json for a machine reader."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import click

from ..adapters import adapter_for
from ..matrix import load_release
from ..naming import wheel_filename
from .cache import DEFAULT_CACHE_DIR, BuildCache
from .common import build_common
from ..hashing import file_sha256
from .glibc import broken_promise
from .repair import RepairError, repair_and_retag
from .smoke import SELFTEST_TIMEOUT_S, SmokeTestError
from .steps import cell_for_wheel, selftest_args, site_packages_of


def _emit(as_json: bool, data: dict[str, object], line: str) -> None:
    click.echo(json.dumps(data, indent=2) if as_json else line)


@click.group("wheel")
def wheel_group() -> None:
    """The build steps one CI job runs (the local `build` runs the same functions)."""


@wheel_group.command("common")
@click.option("--release", required=True, metavar="R", help="Release version, e.g. 2.0.0: the wheel's version.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder the wheel is written to.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=DEFAULT_CACHE_DIR, show_default=True, help="Content-addressed build cache.")
@click.option("--json", "as_json", is_flag=True, help="Print {path, version, sha256, reused} as JSON.")
def common_cmd(release: str, out_dir: Path, cache_dir: Path, as_json: bool) -> None:
    """Build perseus-common (native/runtime) with version = the release into OUT."""
    info = load_release(release).info
    cache = BuildCache(cache_dir)
    try:
        common = build_common(info, cache)
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / common.path.name
        shutil.copyfile(common.path, target)
    finally:
        cache.close()
    _emit(
        as_json,
        {"path": str(target), "version": info.version, "sha256": common.sha256, "reused": common.reused},
        f"{target} (perseus-common {info.version}, sha256 {common.sha256[:12]}{', from the cache' if common.reused else ''})",
    )


@wheel_group.command("repair")
@click.argument("wheel", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--release", required=True, metavar="R", help="The release the wheel was built for.")
@click.option("--cuda", required=True, metavar="CUDA", help="The CUDA toolkit it was built for: cpu, 11.0, 13.0 ...")
@click.option("--dest", "dest_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder the repaired wheel goes to (cibuildwheel's {dest_dir}).")
@click.option(
    "--framework-python",
    metavar="PY",
    help="An interpreter with the cell's framework installed: auditwheel sees its libraries (as in the local build). Default: none.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def repair_cmd(wheel: Path, release: str, cuda: str, dest_dir: Path, framework_python: str | None, as_json: bool) -> None:
    """auditwheel repair WHEEL with the framework exclusion list, then re-tag it to the release's published name
    (or keep the tag auditwheel proved, when the binary needs a newer glibc than the release's tag promises)."""
    rel = load_release(release)
    cell = cell_for_wheel(rel.cells, wheel.name, cuda)
    library_path: list[Path] = []
    if framework_python:
        library_path = list(adapter_for(cell.framework).library_dirs(site_packages_of(framework_python)))
    with tempfile.TemporaryDirectory(prefix="aiacc-repair-") as scratch:
        result = repair_and_retag(wheel, Path(scratch), wheel_filename(cell), library_path)
        broken = broken_promise(result.wheel)
        if broken:  # the tag must never promise a glibc the shared objects break
            raise RepairError(broken)
        dest_dir.mkdir(parents=True, exist_ok=True)
        target = dest_dir / result.wheel.name
        shutil.move(str(result.wheel), target)
    data = {
        "cell": cell.key,
        "wheel": str(target),
        "sha256": file_sha256(target),
        "repaired_platform": result.repaired_platform,
        "retagged": result.retagged,
        "grafted": list(result.grafted),
        "note": result.note,
    }
    line = f"{target} (cell {cell.key}; auditwheel: {result.repaired_platform}{', re-tagged' if result.retagged else ''})"
    _emit(as_json, data, line + (f"\nnote: {result.note}" if result.note and not as_json else ""))


@wheel_group.command("selftest")
@click.option("--release", required=True, metavar="R", help="The release of the installed wheel.")
@click.option("--framework", required=True, metavar="FW", help="A framework of `aiacc-build frameworks list`.")
@click.option("--framework-version", required=True, metavar="V", help="The framework version the wheel was built for, e.g. 2.13.0.")
@click.option("--python", "python", default="python", show_default=True, help="The interpreter whose environment holds the wheel, its framework and perseus-common.")
@click.option("--json", "as_json", is_flag=True, help="Print {command, exit_code, output} as JSON.")
def selftest_cmd(release: str, framework: str, framework_version: str, python: str, as_json: bool) -> None:
    """Run the wheel's own self-test (python -m perseus.<fw>._selftest) in PYTHON's environment."""
    rel = load_release(release)
    cells = [c for c in rel.cells if c.framework.value == framework and c.framework_version == framework_version]
    if not cells:
        known = sorted({f"{c.framework.value} {c.framework_version}" for c in rel.cells})
        raise SmokeTestError(f"release {release} has no cell of {framework} {framework_version}; it has {', '.join(known)}")
    command = [python, *selftest_args(cells[0])]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=SELFTEST_TIMEOUT_S)
    except FileNotFoundError:
        raise SmokeTestError(f"no interpreter {python!r}: pass --python of the environment holding the wheel") from None
    except subprocess.TimeoutExpired:
        raise SmokeTestError(f"`{' '.join(command)}` ran longer than {SELFTEST_TIMEOUT_S} s") from None
    output = (proc.stdout + proc.stderr).strip()
    if as_json:
        click.echo(json.dumps({"command": command, "exit_code": proc.returncode, "output": output}, indent=2))
    elif output:
        click.echo(output)
    if proc.returncode != 0:
        raise SmokeTestError(f"`{' '.join(command)}` failed (exit {proc.returncode})" + ("" if as_json else " (output above)"))
    if not as_json:
        click.echo(f"self-test passed: {' '.join(command)}", err=True)


def register(cli: click.Group) -> None:
    cli.add_command(wheel_group)


__all__ = ["register", "wheel_group"]
