"""`aiacc-build index` and `aiacc-build serve`."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import click
from rich.console import Console

from .. import hints
from ..wheels.record import mirror_root
from ..errors import ConfigurationError
from ..matrix import default_release, load_release
from ..naming import simple_index_dir
from ..paths import DIST_DIR
from .mirror import build_index
from .serve import LOOPBACK, MirrorServer, tls_context
from .served import point_install_script

console = Console()


def _counts(root: Path) -> str:
    counts = json.loads((root / "support.json").read_text())["counts"]
    return ", ".join(f"{n} {status}" for status, n in counts.items())


dist_option = click.option(
    "--dist",
    "dist_dir",
    type=click.Path(path_type=Path),
    default=DIST_DIR,
    show_default=True,
    help="Output root holding dist/<release>/.",
)


base_url_option = click.option(
    "--base-url",
    metavar="URL",
    help="The URL this mirror copy is served from: the install script written into it uses it as its default "
    "mirror (default: the release's mirror URL).",
)


@click.command("index")
@click.option("--release", "release", metavar="R", help="Release to index (default: the newest in matrix/releases).")
@dist_option
@click.option(
    "--from-wheels",
    is_flag=True,
    help="Index the wheels lying in dist/<release>/ (e.g. CI artifacts) instead of a build record: "
    "a cell whose wheel is there is built, the others are listed as not built.",
)
@base_url_option
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def index_cmd(release: str | None, dist_dir: Path, from_wheels: bool, base_url: str | None, as_json: bool) -> None:
    """Write the PEP 503 indexes, manifest.json, SHA256SUMS, SUPPORT.md / support.json (from the build
    record) and the install script of dist/<release>/ (after `build`)."""
    release = release or default_release()
    result = build_index(release, dist_dir, from_wheels=from_wheels, base_url=base_url)
    built = result.manifest.built
    if as_json:
        click.echo(
            json.dumps(
                {
                    "release": release,
                    "root": str(result.root),
                    "indexes": result.manifest.indexes,
                    "built": len(built),
                    "deferred": len(result.manifest.cells) - len(built),
                    "pages": list(result.pages),
                    "checksummed": list(result.checksummed),
                    "stale": list(result.stale),
                },
                indent=2,
            )
        )
        return
    console.print(
        f"[bold]{result.root}[/]: {len(built)} cell wheels + perseus-common indexed, "
        f"{len(result.manifest.cells) - len(built)} cells deferred (in manifest.json)"
    )
    for folder, index in result.manifest.indexes.items():
        console.print(f"  index {index}" + ("  (perseus-common, for --extra-index-url)" if not folder else ""))
    console.print(f"  {len(result.checksummed)} files in SHA256SUMS")
    for path in result.stale:
        console.print(f"  [yellow]not published[/]: {path} (no cell of this build made it; delete it)")
    console.print(f"  SUPPORT.md: {_counts(result.root)}")
    for line in hints.next_steps(release, dist_dir):
        console.print(line, soft_wrap=True)


@click.command("serve")
@click.option("--release", "release", metavar="R", help="Release to serve (default: the newest in matrix/releases).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port).",
)
@dist_option
@click.option(
    "--certfile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Serve HTTPS with this PEM certificate (chain); the install script then needs --ca-bundle for a private CA.",
)
@click.option(
    "--keyfile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The private key of --certfile (default: inside --certfile).",
)
@click.option(
    "--base-url",
    metavar="URL",
    help="Write this URL into the served install script as its default mirror (e.g. the URL a proxy serves "
    "this copy at); default: the URL this server listens on.",
)
def serve_cmd(
    release: str | None, port: int, dist_dir: Path, certfile: Path | None, keyfile: Path | None, base_url: str | None
) -> None:
    """Serve dist/<release>/ over HTTP (or HTTPS) on 127.0.0.1 (Ctrl-C stops), a local stand-in for the
    mirror URL. The install script it serves defaults to this server (or --base-url) as its mirror."""
    release = release or default_release()
    if keyfile is not None and certfile is None:
        raise ConfigurationError("--keyfile needs --certfile")
    root = mirror_root(release, dist_dir)
    if not (root / "manifest.json").is_file():
        raise ConfigurationError(
            f"{root} is not an indexed mirror: run `{hints.build(release, dist_dir)}` and `{hints.index(release, dist_dir)}` first"
        )
    try:
        tls = tls_context(certfile, keyfile) if certfile is not None else None
        server = MirrorServer(root, port, log_sink=lambda line: console.print(f"[dim]{line}[/]"), tls=tls)
    except ssl.SSLError as exc:
        raise ConfigurationError(f"cannot use {certfile} / {keyfile or certfile} for TLS: {exc.reason}") from None
    except OSError as exc:
        raise ConfigurationError(f"cannot listen on {LOOPBACK}:{port}: {exc.strerror}; pick another --port") from None
    try:
        point_install_script(load_release(release), root, base_url or server.url)
    except Exception:
        server.httpd.server_close()
        raise
    console.print(f"serving {root} at [bold]{server.url}/[/]")
    console.print(f"  install: {hints.run_installer(server.url)}", soft_wrap=True)
    console.print(f"  pip install --index-url {server.url}/<folder>/{simple_index_dir(None)} perseus_torch==<version>")
    console.print(f"  pip install <wheel URL> --extra-index-url {server.url}/{simple_index_dir(None)}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()


def register(cli: click.Group) -> None:
    cli.add_command(index_cmd)
    cli.add_command(serve_cmd)
