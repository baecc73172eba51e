"""`aiacc-build build`."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from .. import hints
from ..errors import BuildError
from ..matrix import default_release, load_release
from ..paths import DIST_DIR
from .cache import DEFAULT_CACHE_DIR, BuildCache
from .display import plan_json, plan_summary, print_plan, print_plan_summary
from .driver import Builder, BuildOptions, BuildReport
from ..registry import RegistryClient
from .plan import human_size, plan_cells
from .select import select

console = Console(stderr=True)


def _report_json(report: BuildReport) -> dict[str, object]:
    return {
        "seconds": round(report.seconds, 2),
        "core_builds": report.core_builds,
        "cores": [
            {
                "key": c.key,
                "backend": c.backend,
                "toolchain": c.toolchain,
                "reused": c.reused,
                "seconds": round(c.seconds, 2),
            }
            for c in report.cores
        ],
        "record": str(report.record_path) if report.record_path else None,
        "common": {"path": str(report.common.path.name), "sha256": report.common.sha256, "reused": report.common.reused}
        if report.common
        else None,
        "built": [
            {
                "key": r.plan.cell.key,
                "path": f"{r.path.parent.name}/{r.path.name}",
                "sha256": r.sha256,
                "size": r.size,
                "fingerprint": r.fingerprint,
                "reused": r.reused,
                "binding_build": r.binding_build,
                "repaired_platform": r.repaired_platform,
                "grafted": list(r.grafted),
                "tested": r.smoke.description if r.smoke else None,
                "test_output": r.smoke.output if r.smoke else None,
                "note": r.note,
                "framework_cuda": r.facts.cuda if r.facts else None,
                "framework_cxx11_abi": r.facts.cxx11_abi if r.facts else None,
                "toolchain": r.toolchain,
                "seconds": round(r.seconds, 2),
                "steps": {name: round(t, 2) for name, t in r.steps.items()},
            }
            for r in report.results
        ],
        "failed": [{"key": f.plan.cell.key, "error": f.error} for f in report.failures],
    }


def _print_report(report: BuildReport) -> None:
    # one line per fact: a log reader greps them, the terminal wraps them
    def say(text: str) -> None:
        console.print(text, soft_wrap=True)

    for r in report.results:
        # a wheel not reused and not compiled is the shared binding build of its framework, re-tagged
        how = "reused" if r.reused else ("re-tagged" if r.core is None else "built")
        say(
            f"[green]{how}[/] {r.path.parent.name}/{r.path.name} ({human_size(r.size)}, sha256 {r.sha256[:12]}, "
            f"auditwheel: {r.repaired_platform}) in {r.seconds:.1f}s"
        )
        if r.smoke:
            say(
                f"  tested: {r.smoke.description}\n    {r.smoke.output.splitlines()[-1] if r.smoke.output else ''}"
            )
        if r.note:
            say(f"  [yellow]note[/]: {r.note}")
    for f in report.failures:
        say(f"[red]failed[/] {f.plan.cell.key}: {f.error}")
    rebuilt = sum(not r.reused for r in report.results)
    backends = sorted({c.backend for c in report.cores})
    say(
        f"{len(report.results)} cells ready ({rebuilt} built, {len(report.results) - rebuilt} from the cache), "
        f"{len(report.failures)} failed, core compiled {report.core_builds}x"
        f"{' (' + ', '.join(backends) + ')' if backends else ''}, {report.seconds:.1f}s; record {report.record_path}"
    )


@click.command("build")
@click.option("--release", "release", metavar="R", help="Release to build (default: the newest in matrix/releases).")
@click.option(
    "--cells",
    "selectors",
    multiple=True,
    metavar="SELECTOR",
    help="Build these cells instead of the default ones (those whose framework is on this disk, and the newest "
    "CPU cell of each other framework with a binding): 'all', a key glob "
    "(torch-2.13.0/cpu/py3.1*/x86_64) or filters (framework=torch,cuda=13.0,python=3.12). Repeatable.",
)
@click.option("--plan-only", is_flag=True, help="Print the plan and stop.")
@click.option(
    "--no-cache", is_flag=True, help="Build everything from scratch in temporary directories (nothing reused or kept)."
)
@click.option("--no-test", is_flag=True, help="Skip the post-build test in a fresh environment.")
@click.option(
    "--offline", is_flag=True, help="Do not ask registries about frameworks (sizes of deferred cells unknown)."
)
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=2, show_default=True, help="Parallel compile jobs.")
@click.option(
    "--dist",
    "dist_dir",
    type=click.Path(path_type=Path),
    default=DIST_DIR,
    show_default=True,
    help="Output root: wheels go to <dist>/<release>/<folder>/.",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    default=DEFAULT_CACHE_DIR,
    show_default=True,
    help="Content-addressed build cache.",
)
@click.option("--verbose", "-v", is_flag=True, help="Print the whole plan: every cell with its status and reason.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan and the results as JSON on stdout.")
def build_cmd(
    release: str | None,
    selectors: tuple[str, ...],
    plan_only: bool,
    no_cache: bool,
    no_test: bool,
    offline: bool,
    jobs: int,
    dist_dir: Path,
    cache_dir: Path,
    verbose: bool,
    as_json: bool,
) -> None:
    """Plan every cell of a release, build the buildable ones, and write dist/<release>/.

    By default (what CI runs) the cells whose exact framework build already lies on this disk are built,
    plus, for each framework whose binding exists and none of whose cells is on this disk, its newest CPU
    cell (one framework download each); every other cell is reported as deferred, with the reason and its
    download size.
    """
    rel = load_release(release or default_release())
    chosen = select(rel.cells, selectors) if selectors else None
    client = RegistryClient(cache_dir / "registry", offline=offline)
    plan = plan_cells(rel.info.version, rel.cells, client, chosen)
    if not as_json:
        (print_plan if verbose else print_plan_summary)(plan, console)
    if plan_only:
        if as_json:
            click.echo(json.dumps(plan_json(plan), indent=2))
        return
    if chosen is not None and not plan.to_build:
        why = "; ".join(sorted({f"{p.cell.key.split('/', 1)[1]}: {p.reason}" for p in plan.deferred if p.cell.key in chosen}))
        raise BuildError(f"none of the selected cells can be built here: {why}")
    cache = BuildCache(cache_dir, enabled=not no_cache)
    builder = Builder(cache, dist_dir, options=BuildOptions(jobs=jobs, test=not no_test))
    try:
        if as_json:
            report = builder.build(rel.info, plan)
        else:
            with console.status("building") as status:
                builder.progress = lambda message: status.update(f"building: {message}")
                report = builder.build(rel.info, plan)
    finally:
        cache.close()
    if as_json:
        click.echo(json.dumps({**plan_json(plan), "build": _report_json(report)}, indent=2))
    else:
        _print_report(report)
        console.print(f"next: index the mirror: {hints.index(rel.info.version, dist_dir)}", soft_wrap=True)
        for line in hints.next_steps(rel.info.version, dist_dir):
            console.print(f"      {line}", soft_wrap=True)
    if report.failures:
        raise BuildError(f"{len(report.failures)} of {len(plan.to_build)} cells failed to build (see above)")


def register(cli: click.Group) -> None:
    cli.add_command(build_cmd)


__all__ = ["register", "plan_summary"]
