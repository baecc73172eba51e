"""`aiacc-build ci run-local` (the rendered workflow's jobs for the local cells, here) and
`aiacc-build ci install-cibuildwheel` (the release's cibuildwheel into the job's Python)."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import click
from rich.console import Console

from .. import naming
from ..registry import RegistryClient
from ..wheels.plan import plan_cells
from ..wheels.select import select
from ..checks.cibw import install_into
from ..errors import BuildError
from ..index.cli import default_release
from ..matrix import load_release
from ..paths import DIST_DIR, REPO_ROOT
from .runner import LocalPlan, LocalRunner
import yaml

from .workflow import Job, load_workflow

console = Console(stderr=True)
WORK_DIR = REPO_ROOT / ".cache" / "aiacc-build" / "run-local"


@click.group("ci")
def ci_group() -> None:
    """The rendered CI workflow: run its jobs here; install the release's cibuildwheel in a job."""


@ci_group.command("install-cibuildwheel")
@click.argument("version")
def install_cibuildwheel_cmd(version: str) -> None:
    """Install cibuildwheel VERSION into this interpreter's environment (a CI job's Python).

    Where the reachable package index lacks one of its pinned dependencies, that pin is relaxed to
    the newest release the index has, and said so (as `check ci` does)."""
    with tempfile.TemporaryDirectory(prefix="aiacc-cibw-") as work:
        notes = install_into(Path(sys.executable), version, Path(work))
    for note in notes:
        console.print(f"[yellow]note[/]: {note}", soft_wrap=True)
    console.print(f"cibuildwheel {version} installed into {sys.prefix}")


@ci_group.command("run-local")
@click.option("--release", metavar="R", help="Release whose rendered workflow runs (default: the newest).")
@click.option("--cells", "selectors", multiple=True, metavar="SELECTOR", help="Local cells (as `build --cells`); default: those whose framework is on this disk.")
@click.option("--dist", "dist_dir", type=click.Path(file_okay=False, path_type=Path), default=DIST_DIR, show_default=True, help="Where the rendered workflow lies (dist/<release>/ci/).")
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), default=WORK_DIR, show_default=True, help="Job workspaces, artifacts and logs (emptied first).")
@click.option("--json", "as_json", is_flag=True, help="Print every job's result as JSON on stdout.")
def run_local_cmd(release: str | None, selectors: tuple[str, ...], dist_dir: Path, work_dir: Path, as_json: bool) -> None:
    """Run the rendered workflow's jobs for the local cells: `run:` steps, cibuildwheel in a builder image
    made here, stand-ins for the workflow's `uses:` actions, then the index and install-check jobs.

    Exit 0 when every job run here passed; 6 when one failed."""
    rel = load_release(release or default_release())
    workflow = dist_dir / rel.info.version / "ci" / naming.ci_workflow_filename(rel.info)
    jobs = load_workflow(workflow)  # refuses unknown actions before anything runs
    chosen = select(rel.cells, selectors) if selectors else None
    plan = plan_cells(rel.info.version, rel.cells, RegistryClient(REPO_ROOT / ".cache" / "aiacc-build" / "registry", offline=True), chosen)
    local = LocalPlan(
        release=rel.info,
        cells=tuple(rel.cells),
        local_keys=frozenset(p.cell.key for p in plan.to_build),
        deferred={p.cell.key: p.reason for p in plan.deferred},
    )
    jobs = _install_check_for_local_cells(jobs, rel, local)
    from .builder import GLIBC_NOTE

    say = (lambda line: None) if as_json else (lambda line: console.print(line, soft_wrap=True, highlight=False))
    say(f"run-local {workflow}: {len(jobs)} jobs; local cells: {', '.join(sorted(local.local_keys)) or 'none'}")
    say(f"note: {GLIBC_NOTE}")
    if work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True)
    engine_box: list = []

    def docker_host() -> str:
        if not engine_box:
            from ..images.cli import STATE_DIR
            from ..images.engine import open_engine

            engine_box.append(open_engine(STATE_DIR))
        socket = engine_box[0].socket
        return socket if "://" in socket else f"unix://{socket}"

    def build_builder(bake_dir: Path, target: str, log_line) -> str:
        from ..images.cli import CACHE_DIR
        from .builder import build_builder as build

        docker_host()
        made = build(engine_box[0].client, rel.info, bake_dir, target, CACHE_DIR, log_line)
        return f"{made.tag} built here from the rendered {target} on {made.standin} (not the manylinux image) in {made.result.seconds:.0f}s"

    started = time.monotonic()
    signal.signal(signal.SIGTERM, _interrupt)  # a stopped run stops its step's processes too
    try:
        results = LocalRunner(local, REPO_ROOT, work_dir, docker_host, build_builder, say).run(jobs)
    finally:
        if engine_box:
            engine_box[0].stop()
    seconds = time.monotonic() - started
    if as_json:
        click.echo(json.dumps({"workflow": str(workflow), "seconds": round(seconds, 1), "note": GLIBC_NOTE, "jobs": [asdict(r) for r in results]}, indent=2))
    else:
        console.print("")
        for r in results:
            colour = {"passed": "green", "failed": "red"}.get(r.status, "yellow")
            line = f"[{colour}]{r.status:12}[/] {r.id} ({r.seconds:.0f}s)"
            console.print(line + (f": {r.reason}" if r.reason else ""), soft_wrap=True, highlight=False)
            for diff in r.local:
                console.print(f"             local: {diff}", soft_wrap=True, highlight=False)
        console.print(f"{sum(r.status == 'passed' for r in results)} passed, {sum(r.status == 'failed' for r in results)} failed, "
                      f"{sum(r.status == 'not run here' for r in results)} not run here in {seconds:.0f}s; logs in {work_dir / 'logs'}")
    if any(r.status in ("failed", "skipped") for r in results):
        raise BuildError("the workflow did not pass here: " + ", ".join(r.id for r in results if r.status in ("failed", "skipped")))


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _install_check_for_local_cells(jobs: list[Job], rel, local: LocalPlan) -> list[Job]:
    """The install-check job checks one cell; when that cell is not built here, the job is taken from the
    workflow rendered for the local cells (the same template, the local cell), and says so."""
    from ..render.ci import install_check, render_ci
    from .workflow import parse_workflow
    from ..checks.ci_check import INSTALL_CHECK_JOB

    wanted = install_check(rel.cells)
    if wanted is None or wanted.cell.key in local.local_keys:
        return jobs
    local_cells = [c for c in rel.cells if c.key in local.local_keys]
    if install_check(local_cells) is None:  # no local cell the job can check (CPython-specific, x86_64)
        why = f"checks {wanted.cell.key}, not built here, and no local cell fits the job"
        return [Job(j.id, j.name, j.needs, j.steps, j.env, None, why) if j.id == INSTALL_CHECK_JOB else j for j in jobs]
    rendered = yaml.safe_load(render_ci(rel.info, local_cells).content)
    replacement = next(j for j in parse_workflow(rendered) if j.id == INSTALL_CHECK_JOB)
    note = f"re-rendered for the local cell ({replacement.name}); the workflow's checks {wanted.name}, not built here"
    return [Job(j.id, j.name, j.needs, replacement.steps, j.env, note) if j.id == INSTALL_CHECK_JOB else j for j in jobs]


def register(cli: click.Group) -> None:
    cli.add_command(ci_group)
