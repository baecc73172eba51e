"""Build-driver benchmark: the local matrix with the content-addressed cache vs every cache off.

    .venv/bin/python bench/build_bench.py [--cells N] [--jobs J] [--keep DIR]

The local matrix is every 2.0.0 cell whose framework lies on this disk. Only one does here (torch
2.13.0+cpu for CPython 3.11: no other torch build for another Python is on disk, and the CPU builds for
3.10/3.12/3.13 live on an index this machine cannot reach), so the matrix is widened to N cells by
building that same cell for further releases (2.0.1, 2.0.2, ...) against the same framework file: real
builds, real wheels, named by naming.py. Each release gets its own core (the core reports its release:
PERSEUS_RELEASE), so these extra cells share the framework and build environment, not the core.

Scenarios (each in fresh temporary directories; the repository's own cache is not touched):
  no cache      every cache off: core, build env, binding, test env built anew per cell (uv --no-cache)
  cold cache    empty cache: the core once per (toolchain, release), one build env per framework build
  no-op         the same build again (plus planning every 2.0.0 cell): nothing is built
  binding edit  one binding source changed: bindings recompile incrementally, cores reused
  core edit     one core source changed: each core once, bindings rebuilt against it
  runtime edit  one perseus-common source changed: perseus-common rebuilt, every wheel re-tested with it
With the cache on, compiles also go through ccache inside it (build/compiler_cache.py): the releases'
cores and bindings share every translation unit the release string does not reach. `AIACC_NO_CCACHE=1`
runs the same scenarios without it (the before/after figure). The edits are code (a static_assert),
not comments, which ccache would see through.
Ratios are against `no cache`. Tests never assert times; this prints them.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from aiacc_build.wheels.cache import BuildCache
from aiacc_build.wheels.compiler_cache import ccache_stats, compiler_cache_env
from aiacc_build.wheels.core import RECIPE
from aiacc_build.wheels.driver import Builder, BuildOptions, BuildReport
from aiacc_build.registry import RegistryClient
from aiacc_build.wheels.plan import BuildPlan, human_size, plan_cells
from aiacc_build.matrix import load_release
from aiacc_build.model import ReleaseInfo
from aiacc_build.paths import NATIVE_DIR, REPO_ROOT


@dataclass(frozen=True)
class Target:
    release: ReleaseInfo
    plan: BuildPlan


@dataclass(frozen=True)
class Outcome:
    name: str
    seconds: float
    cores: int
    built: int
    reused: int
    sizes: tuple[int, ...]
    compiles: str  # ccache hits/calls in this scenario ("-" without ccache)


def local_matrix(n: int, registry: Path) -> list[Target]:
    release = load_release("2.0.0")
    plan = plan_cells("2.0.0", release.cells, RegistryClient(registry, offline=True))
    local = list(plan.to_build)
    if not local:
        raise SystemExit("no 2.0.0 cell has its framework on this disk: nothing to benchmark")
    targets = [Target(release.info, BuildPlan("2.0.0", tuple(local)))]
    patch = 1
    while sum(len(t.plan.to_build) for t in targets) < n:
        version = f"2.0.{patch}"
        info = dataclasses.replace(release.info, version=version)
        cells = []
        for p in local[: n - sum(len(t.plan.to_build) for t in targets)]:
            cell = dataclasses.replace(p.cell, release=info, release_version=version)
            cells.append(dataclasses.replace(p, cell=cell))
        targets.append(Target(info, BuildPlan(version, tuple(cells))))
        patch += 1
    return targets


def run(
    name: str,
    targets: list[Target],
    cache: BuildCache,
    dist: Path,
    native: Path,
    jobs: int,
    replan: bool = False,
    registry: Path | None = None,
) -> Outcome:
    before = ccache_stats(cache)
    started = time.perf_counter()
    reports: list[BuildReport] = []
    builder = Builder(
        cache,
        dist,
        native_dir=native,
        options=BuildOptions(jobs=jobs),
        progress=lambda m: print(f"  [{name}] {m}", file=sys.stderr, flush=True),
    )
    if replan:  # what `aiacc-build build` does before building: plan every cell of the release
        release = load_release("2.0.0")
        plan_cells(
            "2.0.0", release.cells, RegistryClient(registry or dist / "registry", offline=True), native_dir=native
        )
    for target in targets:
        report = builder.build(target.release, target.plan)
        if report.failures:
            raise SystemExit(f"{name}: " + "\n".join(f.error for f in report.failures))
        reports.append(report)
    seconds = time.perf_counter() - started
    after = ccache_stats(cache)
    cache.close()
    hits, misses = (after.get(k, 0) - before.get(k, 0) for k in ("hits", "misses"))
    compiles = f"{hits}/{hits + misses}" if after else "-"
    results = [r for rep in reports for r in rep.results]
    for r in results:
        steps = ", ".join(f"{k} {v:.1f}s" for k, v in r.steps.items())
        print(f"  [{name}] {r.plan.cell.key}: {r.seconds:.1f}s ({steps})", file=sys.stderr, flush=True)
    return Outcome(
        name=name,
        seconds=seconds,
        cores=sum(rep.core_builds for rep in reports),
        built=sum(not r.reused for r in results),
        reused=sum(r.reused for r in results),
        sizes=tuple(r.size for r in results),
        compiles=compiles,
    )


def touch(path: Path) -> None:
    """A code edit, not a comment: a comment leaves the preprocessed text, hence ccache's key, unchanged."""
    path.write_text(path.read_text() + f'\nstatic_assert(true, "build_bench edit {time.time_ns()}");\n')


def cli_noop_seconds(cache_dir: Path, dist: Path) -> float:
    """The real command on the default local matrix, warm: `aiacc-build build --offline` (process start included)."""
    cmd = [
        str(Path(sys.executable).parent / "aiacc-build"),
        "build",
        "--offline",
        "--cache-dir",
        str(cache_dir),
        "--dist",
        str(dist),
        "--json",
    ]
    subprocess.run(cmd, check=True, capture_output=True)  # warm it (the real tree's wheel may differ)
    started = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=4, help="cells in the local matrix (default 4)")
    parser.add_argument("--jobs", type=int, default=2, help="compile jobs (default 2)")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it (default: a temporary one)")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="aiacc-build-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    native = work / "native"
    shutil.rmtree(native, ignore_errors=True)
    shutil.copytree(NATIVE_DIR, native, ignore=shutil.ignore_patterns("build", "build-*", "__pycache__", "*.egg-info"))
    recipe = work / RECIPE
    shutil.rmtree(recipe, ignore_errors=True)
    if (NATIVE_DIR.parent / RECIPE).is_dir():  # the core of the copy is built through its conan recipe
        shutil.copytree(NATIVE_DIR.parent / RECIPE, recipe, ignore=shutil.ignore_patterns("__pycache__"))
    targets = local_matrix(args.cells, work / "registry")
    cells = [p.cell.key for t in targets for p in t.plan.to_build]
    print(
        f"local matrix: {len(cells)} cells, {len(targets)} releases (only "
        f"{len(targets[0].plan.to_build)} framework build on disk; the others are the same cell in further releases)"
    )
    for key in cells:
        print(f"  {key}")

    cache_dir = work / "cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    outcomes = [
        run("no cache", targets, BuildCache(work / "nocache", enabled=False), work / "dist-nocache", native, args.jobs)
    ]
    cached = BuildCache(cache_dir)
    outcomes.append(run("cold cache", targets, cached, work / "dist", native, args.jobs))
    outcomes.append(
        run("no-op", targets, cached, work / "dist", native, args.jobs, replan=True, registry=work / "registry")
    )
    touch(native / "bindings" / "torch" / "src" / "ops_cpu.cpp")
    outcomes.append(run("binding edit", targets, cached, work / "dist", native, args.jobs))
    touch(native / "core" / "src" / "status.cpp")
    outcomes.append(run("core edit", targets, cached, work / "dist", native, args.jobs))
    runtime_init = native / "runtime" / "perseus" / "__init__.py"
    runtime_init.write_text(runtime_init.read_text() + f"\n# build_bench edit {time.time_ns()}\n")
    outcomes.append(run("runtime edit", targets, cached, work / "dist", native, args.jobs))
    cli = cli_noop_seconds(cache_dir, work / "dist-cli")

    base = outcomes[0].seconds
    print()
    print(
        f"{'scenario':<14}{'seconds':>10}{'x vs no cache':>15}{'cores built':>13}{'wheels built':>14}{'reused':>8}"
        f"{'ccache hits':>13}"
    )
    for o in outcomes:
        print(
            f"{o.name:<14}{o.seconds:>10.2f}{base / o.seconds:>15.1f}{o.cores:>13}{o.built:>14}{o.reused:>8}"
            f"{o.compiles:>13}"
        )
    ccache = "on" if compiler_cache_env(BuildCache(cache_dir)) else "off (AIACC_NO_CCACHE=1 or no ccache)"
    print(f"compiler cache (ccache) {ccache} in the cached scenarios")
    print(
        "\n`aiacc-build build --offline` no-op on the default local matrix "
        f"(new process, plans all 2.0.0 cells): {cli:.2f}s"
    )
    sizes = sorted(set(outcomes[1].sizes))
    print(f"wheel sizes: {', '.join(human_size(s) for s in sizes)} ({', '.join(str(s) for s in sizes)} bytes)")
    print(
        f"machine: {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores, "
        f"load {open('/proc/loadavg').read().split()[0]} at the end; work dir {work}"
    )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT / "src"))
    main()
