"""`aiacc-build images ...`: build the local images, run a registry on loopback, push, pull."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import click
from rich.console import Console

from ..matrix import load_release
from ..paths import DIST_DIR, REPO_ROOT
from ..render.support import BuildHost
from .build import pull_image, push_image
from ..errors import UnsupportedCellError
from .engine import DEFAULT_SOCKET, open_engine, own_engine_pid, stop_own_engine
from .run_line import memlock_option, run_line
from .progress import StepProgress
from .local import buildable_images, build_local_images, local_images
from .registry import RegistryServerError, start_registry
from .wheelhouse import DEFAULT_PORT

console = Console(stderr=True)
STATE_DIR = REPO_ROOT / ".cache" / "aiacc-build" / "docker"
CACHE_DIR = REPO_ROOT / ".cache" / "aiacc-build" / "images"


@click.group("images")
def images_group() -> None:
    """Docker images: build the local cells' images from the rendered Dockerfiles, push, pull.

    dockerd is started on a private socket when none answers there (Debian's docker.io); the base
    image is made with debootstrap; the registry is Debian's docker-registry on 127.0.0.1."""


@images_group.command("build")
@click.option("--release", required=True, help="Release version, e.g. 2.0.0.")
@click.option("--cell", "cells", multiple=True, metavar="KEY",
              help="Only the images of these cells (repeatable): the key as `build --plan-only` prints it "
              "(torch-2.13.0/cpu/py3.11/x86_64), with or without the release in front.")
@click.option("--dist", type=click.Path(file_okay=False, path_type=Path), default=DIST_DIR, show_default=True, help="Mirror root parent (dist/<release>).")
@click.option("--port", type=int, default=DEFAULT_PORT, show_default=True, help="Loopback port that serves the build inputs.")
@click.option("--push", "registry", metavar="HOST:PORT", help="Also push every built image to this registry.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def build_command(release: str, cells: tuple[str, ...], dist: Path, port: int, registry: str | None, as_json: bool) -> None:
    """Build the images of the cells this machine builds (see SUPPORT.md: built here).

    Without --cell: every local image whose wheels lie in dist/<release> and whose base is made here;
    the others are listed as skipped, with why and the fix. With --cell, any missing input is an error."""
    loaded = load_release(release)
    cells = cell_keys(loaded.info.version, cells)
    images, skipped = buildable_images(local_images(loaded.cells, BuildHost.detect(), cells), dist / loaded.info.version, named=bool(cells))
    if not as_json:
        for tag, why in skipped.items():
            console.print(f"[yellow]skipped[/] {tag}: {why}")
    log_path = dist / f"{loaded.info.version}.images-build.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if not as_json:
        console.print(f"building {len(images)} image(s); the full build log: {log_path}")
    if not as_json:
        console.print("starting dockerd (or finding it) ...")
    engine = open_engine(STATE_DIR)
    ok = False
    try:
        with log_path.open("w") as log, console.status("starting") as status:
            results = build_local_images(
                engine.client,
                images,
                dist / loaded.info.version,
                CACHE_DIR,
                port,
                on_line=StepProgress(", ".join(i.tags[0] for i in images), log, status.update),
            )
        pushed = {r.image.tags[0]: push_image(engine.client, r.image.tags[0], registry) for r in results} if registry else {}
        dockerd_pid = engine.process.pid if engine.process is not None else own_engine_pid(STATE_DIR)
        memlock = {r.image.tags[0]: memlock_option(engine.client, r.image.tags[0], dockerd_pid) for r in results}
        ok = True
    finally:
        # after a build the tool's own dockerd keeps running, so that the printed `docker run` works as printed
        engine.release() if ok else engine.stop()
    kept = own_engine_pid(STATE_DIR) if not os.environ.get("DOCKER_HOST") else None
    rows = [
        {
            "tag": r.image.tags[0],
            "cell": r.image.cell.key,
            "image_id": r.result.image_id,
            "seconds": round(r.result.seconds, 2),
            "base_made_seconds": None if r.base.made_seconds is None else round(r.base.made_seconds, 2),
            "size_bytes": r.result.size_bytes,
            "steps": r.result.steps,
            "cached_steps": r.result.cached_steps,
            "cache_hit": r.result.cache_hit,
            "pushed": pushed.get(r.image.tags[0]),
            "run": run_line(next(c for c in loaded.cells if c.key == r.image.cell.key), r.image.tags[0],
                            memlock[r.image.tags[0]][0]),
            "run_note": memlock[r.image.tags[0]][1],
        }
        for r in results
    ]
    if as_json:
        click.echo(json.dumps({"built": rows, "skipped": skipped, "dockerd_pid": kept}, indent=2))
        return
    for row in rows:
        base = f" (base made in {row['base_made_seconds']}s)" if row["base_made_seconds"] is not None else ""
        console.print(
            f"built {row['tag']} in {row['seconds']}s{base}: {row['size_bytes'] / 2**20:.0f} MiB, "
            f"{row['cached_steps']}/{row['steps']} steps cached" + (f", pushed {row['pushed']}" if row["pushed"] else ""),
            soft_wrap=True,
        )
        console.print(f"  run it: {row['run']}", soft_wrap=True, markup=False, highlight=False)
        if row["run_note"]:
            console.print(f"  ({row['run_note']})", soft_wrap=True, markup=False, highlight=False)
    console.print(f"full build log: {log_path}")
    if kept is not None:
        console.print(f"dockerd (started by this tool, pid {kept}) keeps running on unix://{DEFAULT_SOCKET} for "
                      f"`docker run`; stop it: aiacc-build images stop", soft_wrap=True, markup=False, highlight=False)


@images_group.command("registry")
@click.option("--port", type=int, default=5000, show_default=True, help="Port on 127.0.0.1.")
def registry_command(port: int) -> None:
    """Run a docker registry on 127.0.0.1:PORT until Ctrl-C."""
    registry = start_registry(STATE_DIR / "registry", port)
    console.print(f"registry on {registry.address}; Ctrl-C (or SIGTERM) stops it")
    # SIGTERM too: the registry runs in its own session, so it must be stopped by us, not orphaned.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        while registry.process.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    else:
        raise RegistryServerError(f"docker-registry exited by itself with {registry.process.returncode}; see {STATE_DIR / 'registry'}")
    finally:
        registry.stop()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@images_group.command("pull")
@click.argument("reference")
def pull_command(reference: str) -> None:
    """Pull REFERENCE (e.g. 127.0.0.1:5000/perseus-training:<tag>) into the local engine."""
    engine = open_engine(STATE_DIR)
    try:
        console.print(pull_image(engine.client, reference))
    finally:
        engine.stop()


def cell_keys(release: str, keys: tuple[str, ...]) -> tuple[str, ...]:
    """`--cell` values as full cell keys: the plan's spelling (no release in front) gets the release."""
    out = []
    for key in keys:
        key = key.strip().strip("/")
        if not key.startswith(f"{release}/"):
            first = key.split("/", 1)[0]
            if first[:1].isdigit():  # another release's key
                raise UnsupportedCellError(f"--cell {key}: the key names release {first}, this build is of --release {release}")
            key = f"{release}/{key}"
        out.append(key)
    return tuple(out)


@images_group.command("stop")
def stop_command() -> None:
    """Stop the dockerd `images build` started and left running (nothing when none runs)."""
    pid = stop_own_engine(STATE_DIR)
    if pid is None:
        console.print(f"no dockerd of this tool runs (pidfile {STATE_DIR / 'dockerd.pid'})")
    else:
        console.print(f"stopped dockerd (pid {pid})")


def register(cli: click.Group) -> None:
    cli.add_command(images_group)
