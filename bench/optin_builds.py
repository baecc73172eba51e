"""Opt-in real builds across torch versions, Pythons, C++ ABIs and toolkits (not CI: GBs of frameworks).

    AIACC_OPTIN=1 .venv/bin/python bench/optin_builds.py [--jobs 2] [--work DIR] [--json FILE]

Plans the cells below with the real planner and builds every one it accepts with the real driver:
conan core per toolkit, binding with scikit-build-core in the cell's isolated build env, auditwheel
repair + re-tag, install into a fresh uv venv with the exact framework file, import, one op. Cells the
planner refuses (no nvcc of exactly their CUDA here, ...) are listed with its reason: they are never
built against another toolkit. Wheels, cores and build envs go into a FRESH build cache under --work,
so every time is a real build; only uv's download cache is shared with the repository's build cache
(`.cache/aiacc-build/uv`), so frameworks are downloaded once (~500 MiB per torch file, ~3 GiB of CUDA
13 libraries per torch release). The first CUDA cell carries the CUDA core's compile.

Needs ~15 GiB free in uv's cache on a first run. Prints the cell table (Markdown) and exits non-zero
when a cell the planner accepted failed, or when a chosen cell was planned otherwise than expected.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from aiacc_build.build.cache import DEFAULT_CACHE_DIR, BuildCache
from aiacc_build.build.driver import Builder, BuildOptions, CellResult
from aiacc_build.build.frameworks import RegistryClient
from aiacc_build.build.plan import CellPlan, human_size, plan_cells
from aiacc_build.matrix import load_release
from aiacc_build.paths import REPO_ROOT

# (release, cell key without the release, expected planner status). Together the built ones cover three
# torch releases x four Pythons, a CPU and a CUDA 13.0 toolkit; the 1.5.0 ones are the pre-cxx11-ABI
# torch 1.8.0 (CUDA 10.2) cells for Python 3.7 and 3.6, which need nvcc 10.2 (a builder image).
CELLS: tuple[tuple[str, str, str], ...] = (
    ("2.0.0", "torch-2.13.0/cpu/py3.11/x86_64", "build"),
    ("2.0.0", "torch-2.14.1/cuda13.0/py3.11/x86_64", "build"),
    ("2.0.0", "torch-2.12.1/cuda13.0/py3.10/x86_64", "build"),
    ("2.0.0", "torch-2.13.0/cuda13.0/py3.12/x86_64", "build"),
    ("2.0.0", "torch-2.14.1/cuda13.0/py3.13/x86_64", "build"),
    ("1.5.0", "torch-1.8.0/cuda10.2/py3.7/x86_64", "deferred"),
    ("1.5.0", "torch-1.8.0/cuda10.2/py3.6/x86_64", "deferred"),
)


@dataclass(frozen=True)
class Row:
    key: str
    plan: CellPlan
    expected: str
    result: CellResult | None
    error: str | None

    @property
    def ok(self) -> bool:
        if self.plan.status.value != self.expected:
            return False
        return self.expected != "build" or (self.result is not None and self.result.smoke is not None)

    def cells(self) -> list[str]:
        p, r = self.plan, self.result
        facts = (r.facts if r else None) or p.facts
        framework = p.framework.filename if p.framework else p.cell.build.requirement
        abi = facts.abi_label if facts else ("pre-cxx11" if p.cell.build.cxx11_abi is False else "cxx11")
        if r is not None:
            toolkit = f"nvcc {p.cuda_compiler.version}" if p.cuda_compiler else "CPU (" + r.toolchain.split(" / ")[0] + ")"
            steps = ", ".join(f"{name} {t:.0f}" for name, t in r.steps.items() if t >= 0.5)
            test = r.smoke.output.splitlines()[-1] if r.smoke and r.smoke.output else "not run"
            return [self.key, framework, abi, toolkit, human_size(r.size), f"{r.seconds:.0f} s ({steps})", test]
        toolkit = f"needs CUDA {p.cell.cuda}" if p.cell.cuda else "CPU"
        status = f"failed: {self.error}" if self.error else f"{p.status.value}: {p.reason}"
        return [self.key, framework, abi, toolkit, "-", "-", status]


HEADER = ["cell", "framework file", "C++ ABI", "toolkit", "wheel", "build time (steps, s)", "test"]


def markdown(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def run(work: Path, jobs: int, uv_cache: Path) -> list[Row]:
    shutil.rmtree(work / "cache", ignore_errors=True)
    shutil.rmtree(work / "dist", ignore_errors=True)
    cache = BuildCache(work / "cache", uv_dir=uv_cache)
    client = RegistryClient(DEFAULT_CACHE_DIR / "registry")
    builder = Builder(
        cache,
        work / "dist",
        options=BuildOptions(jobs=jobs),
        progress=lambda m: print(f"  {time.strftime('%H:%M:%S')} {m}", file=sys.stderr, flush=True),
    )
    rows: list[Row] = []
    for version in dict.fromkeys(release for release, _, _ in CELLS):
        release = load_release(version)
        wanted = {f"{version}/{key}": expected for rel, key, expected in CELLS if rel == version}
        missing = set(wanted) - {c.key for c in release.cells}
        if missing:
            raise SystemExit(f"release {version} has no cells {sorted(missing)}: update CELLS")
        plan = plan_cells(version, release.cells, client, selected_keys=set(wanted))
        chosen = [p for p in plan.cells if p.cell.key in wanted]
        report = builder.build(release.info, plan) if plan.to_build else None
        results = {r.plan.cell.key: r for r in report.results} if report else {}
        failures = {f.plan.cell.key: f.error for f in report.failures} if report else {}
        for p in chosen:
            rows.append(Row(p.cell.key, p, wanted[p.cell.key], results.get(p.cell.key), failures.get(p.cell.key)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="compile jobs (default 2)")
    parser.add_argument("--work", type=Path, default=REPO_ROOT / "build" / "optin", help="work directory")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    if os.environ.get("AIACC_OPTIN") != "1":
        print("opt-in: set AIACC_OPTIN=1 (downloads GBs of frameworks, ~15 min on 2 cores)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows = run(args.work, args.jobs, DEFAULT_CACHE_DIR / "uv")
    print(markdown(rows))
    built = [r for r in rows if r.result is not None]
    print(
        f"\n{len(built)} built and tested, {len(rows) - len(built)} not built; torch "
        f"{', '.join(sorted({r.plan.cell.framework_version for r in built}))}; Python "
        f"{', '.join(sorted({r.plan.cell.python or '' for r in built}, key=lambda v: tuple(map(int, v.split('.')))))}; "
        f"{time.perf_counter() - started:.0f} s in all, {os.cpu_count()} cores, "
        f"load {open('/proc/loadavg').read().split()[0]} at the end"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    dict(zip(HEADER, r.cells()), ok=r.ok, expected=r.expected, steps=r.result.steps if r.result else None)
                    for r in rows
                ],
                indent=2,
            )
            + "\n"
        )
    bad = [r.key for r in rows if not r.ok]
    if bad:
        print(f"not as expected: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT / "src"))
    sys.exit(main())
