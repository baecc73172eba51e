"""`aiacc-build frameworks`: the registered framework adapters and the runtime table made from them."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..errors import StaleOutputError
from ..paths import NATIVE_DIR, REPO_ROOT
from . import all_adapters
from .runtime_table import RUNTIME_TABLE, stale_runtime_table, write_runtime_table


@click.group("frameworks")
def frameworks() -> None:
    """The framework adapters (src/aiacc_build/adapters/): one per framework of the matrix."""


@frameworks.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--names", "names_only", is_flag=True, help="Only the names, one a line (dev/lib.sh reads them).")
def list_cmd(as_json: bool, names_only: bool) -> None:
    """Every registered framework: its distributions, binding folder and whether that binding exists."""
    if names_only:
        click.echo("\n".join(a.name for a in all_adapters()))
        return
    rows = [
        {
            "name": a.name,
            "display_name": a.display_name,
            "distributions": list(a.distributions),
            "distribution_pattern": a.distribution_pattern,
            "binding_distribution": a.binding_distribution,
            "binding_dir": str(a.binding_dir(NATIVE_DIR).relative_to(REPO_ROOT)),
            "binding_missing": a.binding_missing,
            "python_specific": a.python_specific,
            "selftest": f"python -m {a.selftest_module}",
        }
        for a in all_adapters()
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table("framework", "distributions", "binding", "wheel", "self-test")
    for row in rows:
        binding = row["binding_dir"] if row["binding_missing"] is None else f"none: {row['binding_missing']}"
        wheel = "per CPython" if row["python_specific"] else "Python-independent"
        table.add_row(row["name"], ", ".join(row["distributions"]), binding, wheel, row["selftest"])
    Console().print(table)


@frameworks.command("runtime-table")
@click.option("--write", is_flag=True, help="Write native/runtime/perseus/_frameworks.py.")
@click.option("--check", is_flag=True, help="Exit 7 when the committed table is stale.")
def runtime_table_cmd(write: bool, check: bool) -> None:
    """The runtime's framework table (doctor, `import perseus`), generated from the adapters."""
    path = Path(RUNTIME_TABLE)
    if write:
        click.echo(f"wrote {path}" if write_runtime_table(path) else f"{path} up to date")
        return
    if stale_runtime_table(path):
        message = f"stale: {path}; run `aiacc-build frameworks runtime-table --write`"
        if check:
            raise StaleOutputError(message)
        click.echo(message)
        return
    click.echo(f"{path} up to date")


@click.command("variables")
@click.option("--write", is_flag=True, help="Write the C header and the reference page.")
@click.option("--check", is_flag=True, help="Exit 7 when either is stale.")
def variables_cmd(write: bool, check: bool) -> None:
    """The PERSEUS_* variables' C header (native/core/include/perseus/variables.h) and reference page
    (docs/variables.md), generated from their one declaration in native/runtime/perseus/config.py."""
    from .. import variables

    if write:
        written = variables.write()
        click.echo("\n".join(f"wrote {p}" for p in written) or "up to date")
        return
    outdated = variables.stale()
    if outdated and check:
        raise StaleOutputError(f"stale: {', '.join(map(str, outdated))}; run `aiacc-build variables --write`")
    click.echo("stale: " + ", ".join(map(str, outdated)) if outdated else "up to date")


def register(cli: click.Group) -> None:
    cli.add_command(frameworks)
    cli.add_command(variables_cmd)
