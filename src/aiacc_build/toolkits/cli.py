"""`aiacc-build toolkit`: provision real CUDA toolkits from Debian's archive into the build cache."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
from rich.table import Table

from ..wheels.plan import human_size
from . import (
    DEFAULT_KEYRING,
    DEFAULT_MIRROR,
    TOOLKITS,
    FetchResult,
    InstalledToolkit,
    fetch_toolkit,
    installed,
    integrity_problems,
    toolkit_spec,
    toolkits_dir,
)

console = Console(stderr=True)


def _toolkit_json(t: InstalledToolkit) -> dict[str, object]:
    return {
        "cuda": t.cuda,
        "nvcc_version": t.nvcc_version,
        "prefix": str(t.prefix),
        "nvcc": str(t.nvcc),
        "suite": t.suite,
        "signature": t.signature,
        "packages": list(t.packages),
    }


@click.group("toolkit")
def toolkit_group() -> None:
    """Real CUDA toolkits provisioned from Debian packages into the build cache (never into /usr).

    A provisioned toolkit is found by `aiacc-build build` like one under /usr/local/cuda-X.Y, so the
    cells of its CUDA become buildable here.
    """


_dir_option = click.option(
    "--dir",
    "root",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Toolkits folder (default: $AIACC_TOOLKITS_DIR, else .cache/aiacc-build/toolkits of this checkout).",
)


@toolkit_group.command("fetch")
@click.argument("cuda", metavar="CUDA")
@_dir_option
@click.option("--mirror", default=DEFAULT_MIRROR, show_default=True, help="Debian mirror to read.")
@click.option(
    "--keyring",
    type=click.Path(path_type=Path, dir_okay=False),
    default=DEFAULT_KEYRING,
    show_default=True,
    help="Keyring gpgv checks the suite's InRelease signature against.",
)
@click.option(
    "--no-signature-check", is_flag=True, help="Trust the InRelease without its signature (sha256 checks only)."
)
@click.option("--keep-downloads", is_flag=True, help="Keep the .deb files under <dir>/downloads after installing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
def fetch_cmd(
    cuda: str,
    root: Path | None,
    mirror: str,
    keyring: Path,
    no_signature_check: bool,
    keep_downloads: bool,
    as_json: bool,
) -> None:
    """Download, verify and unpack the real nvcc of CUDA (e.g. 12.4) into the toolkits folder.

    The suite's InRelease is checked with gpgv, the Packages index and every .deb against the SHA256
    they are signed with; only the members a compile needs are unpacked into a standard layout
    (bin/nvcc, nvvm/, include/, lib64/). A no-op when the toolkit is already there and intact.
    """
    spec = toolkit_spec(cuda)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=console,
        transient=as_json,
        disable=as_json,
    ) as progress:
        tasks: dict[str, int] = {}

        def on_bytes(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = progress.add_task(label, total=total)
            progress.update(tasks[label], completed=done)

        def on_step(message: str) -> None:
            if not as_json:
                progress.console.print(f"[dim]{message}[/]")

        result = fetch_toolkit(
            cuda,
            root=root,
            mirror=mirror,
            keyring=None if no_signature_check else keyring,
            keep_downloads=keep_downloads,
            progress=on_bytes,
            step=on_step,
        )
    if as_json:
        click.echo(json.dumps(_fetch_json(result), indent=2))
        return
    t = result.toolkit
    if result.fetched:
        times = ", ".join(f"{name} {s:.1f}s" for name, s in result.seconds.items())
        console.print(
            f"[green]provisioned[/] nvcc {t.nvcc_version} in {t.prefix} "
            f"({human_size(result.downloaded_bytes)} downloaded; {times})"
        )
    else:
        console.print(f"[green]present and intact[/]: nvcc {t.nvcc_version} in {t.prefix}")
    console.print(f"  signature: {t.signature}")
    console.print(f"  use: -DCMAKE_CUDA_COMPILER={t.nvcc} -DCUDAToolkit_ROOT={t.prefix}")


def _fetch_json(result: FetchResult) -> dict[str, object]:
    return {
        **_toolkit_json(result.toolkit),
        "fetched": result.fetched,
        "downloaded_bytes": result.downloaded_bytes,
        "seconds": {k: round(v, 2) for k, v in result.seconds.items()},
    }


@toolkit_group.command("list")
@_dir_option
@click.option("--verify", is_flag=True, help="Re-hash every installed file against the toolkit's manifest.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON on stdout.")
def list_cmd(root: Path | None, verify: bool, as_json: bool) -> None:
    """Every CUDA toolkit this tool can provision, and whether it is installed (and intact, with --verify)."""
    root = root or toolkits_dir()
    rows = []
    for cuda, spec in sorted(TOOLKITS.items()):
        prefix = root / spec.dirname
        toolkit = installed(prefix)
        problems = integrity_problems(prefix) if (verify and toolkit is not None) else []
        rows.append(
            {
                "cuda": cuda,
                "source": f"Debian {spec.suite}: {', '.join(p.name for p in spec.packages)}",
                "download": spec.approx_download,
                "installed": toolkit is not None,
                "intact": (not problems) if (verify and toolkit is not None) else None,
                "problems": problems,
                "toolkit": _toolkit_json(toolkit) if toolkit else None,
            }
        )
    if as_json:
        click.echo(json.dumps({"dir": str(root), "toolkits": rows}, indent=2))
        return
    table = Table(title=f"provisionable CUDA toolkits ({root})")
    for column in ("CUDA", "source", "download", "state"):
        table.add_column(column, overflow="fold")
    for row in rows:
        toolkit = row["toolkit"]
        if toolkit is None:
            state = f"[dim]not installed[/]: aiacc-build toolkit fetch {row['cuda']}"
        elif row["problems"]:
            state = f"[red]damaged[/]: {'; '.join(row['problems'][:3])}: run fetch again"  # type: ignore[index]
        else:
            state = f"[green]nvcc {toolkit['nvcc_version']}[/]" + (" (verified)" if row["intact"] else "")  # type: ignore[index]
        table.add_row(str(row["cuda"]), str(row["source"]), str(row["download"]), state)
    console.print(table)


def register(cli: click.Group) -> None:
    cli.add_command(toolkit_group)
