"""`aiacc-build matrix ...`: list, show, validate and sync the release matrices."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from urllib.parse import unquote

import click
from rich.console import Console
from rich.table import Table

from .. import naming
from ..adapters import names as adapter_names
from ..errors import MatrixError, StaleOutputError, UnsupportedCellError
from ..paths import facts_dir as matrix_facts_dir, matrix_dir, releases_dir
from . import sync as sync_mod
from .loader import Release, load_all, load_release, select_cells
from .names import cell_record
from ..registry import RegistryClient
from .registry import RecordedRegistry
from .schema_export import render_schemas

console = Console()


def _releases(release: str | None) -> list[Release]:
    return [load_release(release)] if release else load_all()


@click.group("matrix")
def matrix() -> None:
    """The release matrices in matrix/releases: one cell per framework wheel."""


@matrix.command("list")
@click.option("--release", "release", metavar="R", help="Only this release (version or path); default: all.")
@click.option("--framework", type=click.Choice(list(adapter_names())), help="Only this framework.")
@click.option("--framework-version", metavar="V", help="Only this framework version, e.g. 1.7.1.")
@click.option("--cuda", metavar="X|cpu", help="Only this CUDA (11.0, cuda11.0, cu110) or 'cpu'.")
@click.option("--python", metavar="P", help="Only cells for this Python (e.g. 3.6), environments included.")
@click.option("--arch", type=click.Choice(["x86_64", "aarch64"]), help="Only this architecture.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of cells with every name computed for each.")
def list_cmd(release, framework, framework_version, cuda, python, arch, as_json) -> None:
    """List cells (human table, or --json with all their names)."""
    records = []
    rows = []
    for rel in _releases(release):
        for cell in select_cells(rel.cells, framework=framework, framework_version=framework_version, cuda=cuda, python=python, arch=arch):
            if as_json:
                records.append(cell_record(cell, rel.cells))
            else:
                rows.append((cell, rel))
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    table = Table(title=f"{len(rows)} cells", show_lines=False)
    for col in ("cell", "framework build", "wheel", "environments"):
        table.add_column(col, overflow="fold")
    for cell, _ in rows:
        table.add_row(cell.key, cell.build.requirement, naming.wheel_path(cell), ", ".join(cell.env_pythons))
    console.print(table)


def find_cell(query: str, releases: list[Release]):
    """A cell by key (1.5.0/torch-1.7.1/cuda11.0/py3.6/x86_64), wheel path, wheel URL or file name."""
    q = unquote(query.strip())
    candidates = []
    for rel in releases:
        for cell in rel.cells:
            path = naming.wheel_path(cell)
            names = {cell.key, path, naming.wheel_url(cell), unquote(naming.wheel_url(cell))}
            if q in names or q.endswith("/" + path):
                return cell, rel
            candidates.extend([cell.key, path])
    fname_hits = [(c, r) for r in releases for c in r.cells if naming.wheel_filename(c) == q.rsplit("/", 1)[-1]]
    if len(fname_hits) == 1 and "/" not in q:
        return fname_hits[0]
    near = difflib.get_close_matches(q, candidates, n=5, cutoff=0.6)
    extra = ""
    if len(fname_hits) > 1:
        extra = f" The file name alone is ambiguous; it exists in {', '.join(sorted({naming.wheel_path(c) for c, _ in fname_hits}))}."
    hint = ("nearest cells: " + "; ".join(near)) if near else "list them with `aiacc-build matrix list`"
    raise UnsupportedCellError(f"no cell {query!r} in the matrix.{extra} {hint}")


@matrix.command("show")
@click.argument("cell")
@click.option("--json", "as_json", is_flag=True, help="Print the cell and all its names as JSON.")
def show_cmd(cell: str, as_json: bool) -> None:
    """Show one CELL: a key like 1.5.0/torch-1.7.1/cuda11.0/py3.6/x86_64 or a wheel path
    like cuda110/perseus_torch-1.5.0+1.7.1-cp36-cp36m-linux_x86_64.whl. Unknown: exit 4."""
    found, rel = find_cell(cell, load_all())
    record = cell_record(found, rel.cells)
    if as_json:
        click.echo(json.dumps(record, indent=2))
        return
    table = Table(title=found.key, show_header=False)
    table.add_column("name")
    table.add_column("value", overflow="fold")

    def add(prefix: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                add(f"{prefix}.{k}" if prefix else k, v)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for i, v in enumerate(value):
                add(f"{prefix}[{i}]", v)
        else:
            table.add_row(prefix, json.dumps(value) if not isinstance(value, str) else value)

    add("", record)
    console.print(table)


@matrix.command("validate")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
def validate_cmd(files: tuple[Path, ...]) -> None:
    """Validate release FILES (default: every file in matrix/releases), the facts, and every base image
    their Dockerfiles can resolve to (matrix/facts/docker/base_images.yaml). Invalid: exit 3."""
    from ..base_images import BaseImageError
    from ..render.docker import builder_images, checked_bases, docker_images
    from ..render.support import BuildHost

    targets = list(files) or sorted(releases_dir().glob("*.yaml"))
    problems: list[str] = []
    no_local_images = BuildHost(arch="", pythons=frozenset())
    for f in targets:
        try:
            rel = load_release(f)
            checked_bases(docker_images(rel.cells, no_local_images), builder_images(rel.info, rel.cells))
            console.print(f"[green]ok[/green] {f}: release {rel.info.version}, {len(rel.cells)} cells")
        except MatrixError as exc:
            problems.extend(exc.problems)
        except BaseImageError as exc:
            problems.append(f"{f}: {exc}")
    if problems:
        raise MatrixError(problems)


@matrix.command("sync")
@click.option("--write", is_flag=True, help="Write the result to matrix/facts/pypi.yaml.")
@click.option("--check", is_flag=True, help="Exit 7 when the committed file differs from the result.")
@click.option("--record", is_flag=True, help="Query PyPI and save its (trimmed) answers to matrix/registry/<today>/.")
@click.option("--from", "from_dir", metavar="DIR|latest", help="Replay a recording instead of querying PyPI (offline).")
@click.option("--facts-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Facts folder to read and (with --write) update (default: the matrix's facts/).")
@click.option("--registry-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of dated recordings (--record writes, --from latest reads; default: the matrix's registry/).")
def sync_cmd(write: bool, check: bool, record: bool, from_dir: str | None, facts_dir: Path | None, registry_dir: Path | None) -> None:
    """Recompute the registry facts (Pythons, arches, CUDA of each release's wheels) from PyPI.

    Prints a diff against the committed matrix/facts/pypi.yaml. Release cells follow from it.
    """
    if record and from_dir:
        raise click.UsageError("--record queries PyPI; --from replays a recording: use one")
    facts_dir = facts_dir or matrix_facts_dir()
    registry_dir = registry_dir or matrix_dir() / "registry"
    if from_dir:
        folder = sync_mod.latest_recording(registry_dir) if from_dir == "latest" else Path(from_dir)
        registry = RecordedRegistry(folder)
        recorded = folder
    else:
        recorded = registry_dir / sync_mod.today()
        registry = RegistryClient(record_dir=recorded if record else None)
        if not record:
            recorded = Path(f"live query {sync_mod.today()} (not recorded)")
    root = matrix_dir().parent
    rel = recorded.relative_to(root) if recorded.is_absolute() and recorded.is_relative_to(root) else recorded
    with console.status("reading the registry ..."):
        data = sync_mod.compute(registry, facts_dir, recorded=str(rel))
    new = sync_mod.render(data)
    target = sync_mod.registry_file_path(facts_dir)
    old = target.read_text(encoding="utf-8") if target.is_file() else ""
    delta = sync_mod.diff(old, new, target)
    click.echo(delta if delta else f"{target}: up to date")
    if write and delta:
        _check_releases_with(facts_dir, target, new)
        target.write_text(new, encoding="utf-8")
        click.echo(f"wrote {target}")
    elif check and delta:
        raise StaleOutputError(f"{target} differs from what `matrix sync` computes; run `aiacc-build matrix sync --write`")


def _check_releases_with(facts_dir: Path, target: Path, new: str) -> None:
    """Refuse to write registry facts under which a release no longer validates (nothing is changed)."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        trial = Path(tmp) / "facts"
        shutil.copytree(facts_dir, trial)
        (trial / target.name).write_text(new, encoding="utf-8")
        problems = []
        for f in sorted(releases_dir().glob("*.yaml")):
            try:
                load_release(f, facts_dir=trial)
            except MatrixError as exc:
                problems.extend(exc.problems)
        if problems:
            raise MatrixError([f"not written: with the new registry facts a release is invalid: {p}" for p in problems])


@matrix.command("schema")
@click.option("--write", is_flag=True, help="Write the schema files.")
@click.option("--check", is_flag=True, help="Exit 7 when a committed schema is stale.")
def schema_cmd(write: bool, check: bool) -> None:
    """JSON schemas of the matrix files (matrix/schema.json and friends), from the pydantic models."""
    stale = []
    for path, text in render_schemas().items():
        current = path.read_text(encoding="utf-8") if path.is_file() else ""
        if current != text:
            stale.append(path)
            if write:
                path.write_text(text, encoding="utf-8")
                click.echo(f"wrote {path}")
    if not stale:
        click.echo("schemas up to date")
    elif check and not write:
        raise StaleOutputError(f"stale: {', '.join(map(str, stale))}; run `aiacc-build matrix schema --write`")
    elif not write:
        click.echo("stale: " + ", ".join(map(str, stale)))


@matrix.command("driver-tables")
@click.option("--write", is_flag=True, help="Write the generated tables.")
@click.option("--check", is_flag=True, help="Exit 7 when a committed table is stale.")
def driver_tables_cmd(write: bool, check: bool) -> None:
    """The install script's and perseus doctor's CUDA-driver tables, from matrix/facts/cuda_drivers.yaml."""
    from .. import cuda_drivers

    changed = cuda_drivers.write() if write else cuda_drivers.stale()
    if not changed:
        click.echo("driver tables up to date")
    elif write:
        for path in changed:
            click.echo(f"wrote {path}")
    elif check:
        raise StaleOutputError(f"stale: {', '.join(map(str, changed))}; run `aiacc-build matrix driver-tables --write`")
    else:
        click.echo("stale: " + ", ".join(map(str, changed)))


def register(cli: click.Group) -> None:
    cli.add_command(matrix)
