"""`aiacc-build render`: write every rendered file of the selected releases into DIR/<release>/."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from rich.console import Console

from ..errors import ConfigurationError, MatrixError
from ..paths import DIST_DIR
from .release import KINDS, ReleaseResult, render_releases_to
from .support import BuildHost

console = Console()


def _load(releases: tuple[str, ...]) -> list:
    try:
        from ..matrix import load_all, load_release
    except ImportError as exc:  # the matrix package is another part of the tool
        raise ConfigurationError(f"the matrix loader (aiacc_build.matrix) is not available: {exc}") from exc
    if not releases:
        return list(load_all())
    return [load_release(r) for r in releases]


@click.command("render")
@click.option("--release", "releases", multiple=True, metavar="R", help="Release version or matrix file (repeatable; default: every release).")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=DIST_DIR, show_default=True, help="Output folder; each release goes to OUT/<release>/.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of status lines.")
def render_command(releases: tuple[str, ...], out: Path, as_json: bool) -> None:
    """Render conda files, Dockerfiles + bake file, the CI workflow, install_AIACC-Training.sh and
    SUPPORT.md / support.json for every cell. Only files whose bytes change are written; files an
    earlier render made and this one does not are removed."""
    start = time.perf_counter()
    loaded = _load(releases)
    if not loaded:
        raise MatrixError(["no release found: the matrix has no releases (matrix/releases/*.yaml)"])
    host = BuildHost.detect()
    versions = [r.info.version for r in loaded]
    if len(set(versions)) != len(versions):
        raise ConfigurationError(f"a release was selected twice: {', '.join(versions)}")
    try:
        results: list[ReleaseResult] = render_releases_to(loaded, out, host)
    except ValueError as exc:  # the matrix holds something no template can express
        raise MatrixError([f"cannot render: {exc}"]) from exc
    except OSError as exc:
        raise ConfigurationError(f"cannot write into {out}: {exc}") from exc
    total = time.perf_counter() - start
    if as_json:
        click.echo(json.dumps({"releases": [r.as_json() for r in results], "seconds": round(total, 4)}, indent=2))
        return
    for result in results:
        console.print(f"[bold]{result.release}[/bold]  {result.cells} cells -> {result.out_dir}")
        for kind in KINDS:
            count = result.files_by_kind.get(kind, 0)
            written = result.written_by_kind.get(kind, 0)
            state = f"[green]{written} written[/green]" if written else "[dim]unchanged[/dim]"
            console.print(f"  {kind:<15} {count:>5} files  {state}")
        if result.report.removed:
            console.print(f"  [yellow]removed {len(result.report.removed)} stale files[/yellow]: {', '.join(result.report.removed[:5])}")
    files = sum(sum(r.files_by_kind.values()) for r in results)
    console.print(f"{sum(r.cells for r in results)} cells, {files} files in {total:.3f}s")


def register(cli: click.Group) -> None:
    cli.add_command(render_command)
