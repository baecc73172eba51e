"""`aiacc-build check conda|ci`: check rendered files against outside facts; --json for machines.

Without --dist the releases are rendered first into a temporary folder, so the check always sees
exactly what `aiacc-build render` writes. Exit code 8 when a rule is broken (warnings do not fail).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from ..errors import ConfigurationError, MatrixError
from .ci_check import check_ci
from .conda_check import check_conda
from ..conda_table import load_conda_table
from .findings import ChecksFailedError, CheckReport

console = Console()


def _load(releases: tuple[str, ...]) -> list:
    from ..matrix import load_all, load_release

    loaded = [load_release(r) for r in releases] if releases else list(load_all())
    if not loaded:
        raise MatrixError(["no release found: the matrix has no releases (matrix/releases/*.yaml)"])
    return loaded


def _with_dist(releases: list, dist: Path | None, run):
    """Run `run(dist)` on `dist`, or on a fresh render of `releases` in a temporary folder."""
    if dist is not None:
        missing = [r.info.version for r in releases if not (dist / r.info.version).is_dir()]
        if missing:
            raise ConfigurationError(f"{dist} has no rendered release {', '.join(missing)}: run `aiacc-build render --out {dist}` first")
        return run(dist)
    from ..render.release import render_releases_to
    from ..render.support import BuildHost

    with tempfile.TemporaryDirectory(prefix="aiacc-check-") as tmp:
        try:
            render_releases_to(releases, Path(tmp), BuildHost.detect())
        except ValueError as exc:
            raise MatrixError([f"cannot render: {exc}"]) from exc
        return run(Path(tmp))


def _print(report: CheckReport, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2))
    else:
        for finding in report.findings:
            style = "red" if finding.severity == "error" else "yellow"
            console.print(Text(finding.severity, style=style) + Text(f" {finding}"), soft_wrap=True)
        for note in report.notes:
            console.print(Text(f"note: {note}", style="dim"), soft_wrap=True)
        checked = ", ".join(f"{n} {what}" for what, n in report.checked.items())
        verdict = "[green]ok[/green]" if report.ok else f"[red]{len(report.errors)} errors[/red]"
        console.print(f"check {report.check}: {verdict}, {len(report.warnings)} warnings ({checked}) in {report.seconds:.2f}s")
    if not report.ok:
        raise ChecksFailedError(f"check {report.check}: {len(report.errors)} rule(s) broken (listed above)")


@click.group("check")
def check() -> None:
    """Check rendered files against facts from outside the code: conda channels, cibuildwheel."""


_release_option = click.option("--release", "releases", multiple=True, metavar="R", help="Release version or matrix file (repeatable; default: every release).")
_dist_option = click.option(
    "--dist", type=click.Path(file_okay=False, path_type=Path), default=None, help="Check the files rendered in DIST/<release>/ (default: render into a temporary folder first)."
)
_json_option = click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")


@check.command("conda")
@_release_option
@_dist_option
@click.option("--table", type=click.Path(dir_okay=False, path_type=Path), default=None, help="The channel table (default: the matrix's facts/conda/packages.yaml).")
@_json_option
def conda_command(releases: tuple[str, ...], dist: Path | None, table: Path | None, as_json: bool) -> None:
    """Every conda environment file: valid match specs, every package on a listed channel in the
    pinned version (matrix/facts/conda/packages.yaml, with sources), the era's CUDA conventions, and the cell's
    Python, CUDA, framework build and Perseus wheels."""
    channel_table = load_conda_table(table)
    loaded = _load(releases)
    report = _with_dist(loaded, dist, lambda d: check_conda(loaded, d, channel_table))
    _print(report, as_json)


@check.command("ci")
@_release_option
@_dist_option
@click.option("--no-cibuildwheel", is_flag=True, help="Skip running the release's cibuildwheel (no PyPI download); selectors are then not proven.")
@_json_option
def ci_command(releases: tuple[str, ...], dist: Path | None, no_cibuildwheel: bool, as_json: bool) -> None:
    """Every CI job: cibuildwheel (the version the release declares, installed into .cache/) lists
    exactly the job's cells; its builder image is a target of the bake file for its CUDA and
    platform; it installs the release's cibuildwheel; the index job expects every wheel."""
    loaded = _load(releases)
    report = _with_dist(loaded, dist, lambda d: check_ci(loaded, d, run_cibuildwheel=not no_cibuildwheel))
    _print(report, as_json)


@check.command("conda-pip")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mirror", "mirror", metavar="URL", default=None, help="Where the release's mirror is served (e.g. `aiacc-build serve`'s http://127.0.0.1:PORT): replaces the release's mirror URL in every pip line.")
@click.option("--mirror-from", metavar="URL", default=None, help="The mirror URL written in the file (default: the mirror URL of the release the file belongs to).")
@click.option("--venv", "venv_dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where to make the fresh environment (default: a temporary folder, removed after).")
@_json_option
def conda_pip_command(file: Path, mirror: str | None, mirror_from: str | None, venv_dir: Path | None, as_json: bool) -> None:
    """Install FILE's pip part for real, as `conda env create` would (`pip install -U -r`), into a
    fresh venv of the file's Python, then import perseus and the file's framework binding."""
    from .conda_env import parse_env_file
    from .conda_pip import install_pip_section

    env, problems = parse_env_file(str(file), file.read_text(encoding="utf-8"))
    if env is None:
        raise ConfigurationError("; ".join(str(p) for p in problems))
    framework = env.name.split("_", 1)[0]
    if mirror_from is None:
        releases = {r.info.mirror_url for r in _load(())}
        mirror_from = next((m for m in sorted(releases) if any(m in line for line in env.pip)), None)
        if mirror_from is None:
            raise ConfigurationError(f"{file} names no release's mirror URL: give --mirror-from")
    modules = ("perseus", f"perseus.{framework}")

    def run(target: Path):
        return install_pip_section(env, target, mirror_from, mirror, modules)

    if venv_dir is not None:
        result = run(venv_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="aiacc-conda-pip-") as tmp:
            result = run(Path(tmp) / "venv")
    if as_json:
        click.echo(json.dumps(result.as_json(), indent=2))
    else:
        console.print(Text(f"{file}: Python {result.python} ({result.interpreter}), {result.rewritten} mirror line(s) rewritten"))
        if result.returncode != 0:
            console.print(Text(result.pip_output[-3000:]), soft_wrap=True)
        for module, where in result.imported.items():
            console.print(Text(f"import {module}: {where}"))
        if result.import_error:
            console.print(Text(result.import_error, style="red"), soft_wrap=True)
        console.print(Text(f"{'ok' if result.ok else 'FAILED'} in {result.seconds:.1f}s", style="green" if result.ok else "red"))
    if not result.ok:
        raise ChecksFailedError(f"{file}: " + ("pip install failed" if result.returncode else "import failed"))


def register(cli: click.Group) -> None:
    cli.add_command(check)
