"""Opt-in real builds across torch versions, Pythons, C++ ABIs and toolkits (not CI: GBs of frameworks).

    AIACC_OPTIN=1 .venv/bin/python bench/optin_builds.py [--jobs 2] [--work DIR] [--json FILE]
        [--only GLOB ...] [--uv-cache DIR]

Plans the cells below with the real planner and builds every one it accepts with the real driver:
conan core per toolkit, binding with scikit-build-core in the cell's isolated build env, auditwheel
repair + re-tag, install into a fresh uv venv with the exact framework file, import, one op. Cells the
planner refuses (no nvcc of exactly their CUDA here, ...) are listed with its reason: they are never
built against another toolkit. Wheels, cores and build envs go into a FRESH build cache under --work,
so every time is a real build; only uv's download cache is shared with the repository's build cache
(`.cache/aiacc-build/uv`, or --uv-cache), so frameworks are downloaded once (~500 MiB per torch file,
~3 GiB of CUDA libraries per torch release). The first CUDA cell of each toolkit carries that core's
compile. `--only GLOB` (repeatable, over RELEASE/KEY) builds a subset of the cells.

The torch 2.6.0 cells are the pre-cxx11-ABI CUDA cells: torch 2.6.0 from PyPI is a CUDA 12.4 build with
-D_GLIBCXX_USE_CXX11_ABI=0, compiled with the real nvcc 12.4 that `aiacc-build toolkit fetch 12.4`
provisions from Debian (the planner defers them with that advice when it is missing). Every built CUDA
wheel's ops library is inspected (bench/wheel_binary.py): device code for sm_75+, no libcudart needed
or vendored, torch-facing symbols in the torch's own C++ ABI.

Probes (not cells, never published): the planner rightly refuses the pre-cxx11 torch 1.8.0 cells
(CUDA 10.2, no nvcc 10.2 here), so the same building blocks compile the binding CPU-only against
that torch's headers and libraries for CPython 3.7 and 3.6 (the latter through a newer interpreter's
scikit-build-core) and run the post-build test. They check what the builder image cannot be asked here:
the binding source against an old torch API, the pre-cxx11 ABI, scikit-build-core on 3.7, cp36.
`--native DIR` builds everything from another native/ tree (e.g. a patched copy).

Needs ~15 GiB free in uv's cache on a first run. Prints the cell table (Markdown) and exits non-zero
when a cell the planner accepted or a probe failed, or a chosen cell was planned otherwise than expected.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from aiacc_build.adapters import adapter_for
from aiacc_build.wheels.binding import build_binding, ensure_binding_envs, read_binding_spec
from aiacc_build.wheels.cache import DEFAULT_CACHE_DIR, BuildCache
from aiacc_build.wheels.common import build_common
from aiacc_build.wheels.core import build_core
from aiacc_build.wheels.driver import BUILD_TYPE, Builder, BuildOptions, CellResult
from aiacc_build.wheels.framework_facts import FrameworkFacts, read_facts
from aiacc_build.wheels.frameworks import resolve_framework
from aiacc_build.registry import RegistryClient
from aiacc_build.hashing import file_sha256, tree_digest
from aiacc_build.wheels.plan import CellPlan, human_size, plan_cells
from aiacc_build.wheels.repair import repair_and_retag
from aiacc_build.wheels.smoke import smoke_test
from aiacc_build.wheels.toolchain import detect_toolchain, find_interpreter
from aiacc_build.matrix import load_release
from aiacc_build.naming import wheel_filename
from aiacc_build.paths import NATIVE_DIR, REPO_ROOT
from wheel_binary import BinaryReport, inspect_wheel

# (release, cell key without the release, expected planner status). Together the built ones cover four
# torch releases x five Pythons, both C++ ABIs, a CPU and two CUDA toolkits (13.0 from /usr/local, 12.4
# provisioned from Debian: run `aiacc-build toolkit fetch 12.4` first); the 1.5.0 ones are the
# pre-cxx11-ABI torch 1.8.0 (CUDA 10.2) cells for Python 3.7 and 3.6, which need nvcc 10.2 (a builder image).
CELLS: tuple[tuple[str, str, str], ...] = (
    ("2.0.0", "torch-2.13.0/cpu/py3.11/x86_64", "build"),
    ("2.0.0", "torch-2.14.1/cuda13.0/py3.11/x86_64", "build"),
    ("2.0.0", "torch-2.12.1/cuda13.0/py3.10/x86_64", "build"),
    ("2.0.0", "torch-2.13.0/cuda13.0/py3.12/x86_64", "build"),
    ("2.0.0", "torch-2.14.1/cuda13.0/py3.13/x86_64", "build"),
    ("2.0.0", "torch-2.6.0/cuda12.4/py3.9/x86_64", "build"),
    ("2.0.0", "torch-2.6.0/cuda12.4/py3.10/x86_64", "build"),
    ("2.0.0", "torch-2.6.0/cuda12.4/py3.11/x86_64", "build"),
    ("2.0.0", "torch-2.6.0/cuda12.4/py3.12/x86_64", "build"),
    ("2.0.0", "torch-2.6.0/cuda12.4/py3.13/x86_64", "build"),
    ("1.5.0", "torch-1.8.0/cuda10.2/py3.7/x86_64", "deferred"),
    ("1.5.0", "torch-1.8.0/cuda10.2/py3.6/x86_64", "deferred"),
)
PROBES: tuple[tuple[str, str], ...] = (
    ("1.5.0", "torch-1.8.0/cuda10.2/py3.7/x86_64"),
    ("1.5.0", "torch-1.8.0/cuda10.2/py3.6/x86_64"),
)


@dataclass(frozen=True)
class Row:
    key: str
    plan: CellPlan
    expected: str
    result: CellResult | None
    error: str | None
    binary: BinaryReport | None = None

    @property
    def binary_problems(self) -> list[str]:
        if self.binary is None or self.result is None:
            return []
        facts = self.result.facts or self.plan.facts
        cxx11 = facts.cxx11_abi if facts else self.plan.cell.build.cxx11_abi is not False
        return self.binary.problems(cuda=self.plan.cell.cuda is not None, cxx11_abi=cxx11)

    @property
    def ok(self) -> bool:
        if self.plan.status.value != self.expected:
            return False
        if self.binary_problems:
            return False
        return self.expected != "build" or (self.result is not None and self.result.smoke is not None)

    def cells(self) -> list[str]:
        p, r = self.plan, self.result
        facts = (r.facts if r else None) or p.facts
        framework = p.framework.filename if p.framework else p.cell.build.requirement
        abi = facts.abi_label if facts else ("pre-cxx11" if p.cell.build.cxx11_abi is False else "cxx11")
        if r is not None:
            toolkit = (
                f"nvcc {p.cuda_compiler.version}" if p.cuda_compiler else "CPU (" + r.toolchain.split(" / ")[0] + ")"
            )
            steps = ", ".join(f"{name} {t:.0f}" for name, t in r.steps.items() if t >= 0.5)
            if r.binding_build is not None and "binding" not in r.steps:  # another Python's build, re-tagged
                steps += "; binding shared, re-tagged"
            test = r.smoke.output.splitlines()[-1] if r.smoke and r.smoke.output else "not run"
            binary = self.binary.summary() if self.binary else "-"
            if self.binary_problems:
                binary += " (PROBLEM: " + "; ".join(self.binary_problems) + ")"
            return [self.key, framework, abi, toolkit, human_size(r.size), f"{r.seconds:.0f} s ({steps})", test, binary]
        toolkit = f"needs CUDA {p.cell.cuda}" if p.cell.cuda else "CPU"
        status = f"failed: {self.error}" if self.error else f"{p.status.value}: {p.reason}"
        return [self.key, framework, abi, toolkit, "-", "-", status, "-"]


@dataclass(frozen=True)
class ProbeRow:
    key: str
    framework_file: str
    facts: FrameworkFacts | None
    backend_python: str | None
    size: int | None
    seconds: float
    steps: dict[str, float]
    test: str | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None and self.test is not None

    def cells(self) -> list[str]:
        abi = self.facts.abi_label if self.facts else "?"
        made = f"CPU compile only (file: {self.facts.toolkit_label if self.facts else '?'})"
        if self.backend_python:
            made += f", backend on Python {self.backend_python}"
        steps = ", ".join(f"{name} {t:.0f}" for name, t in self.steps.items() if t >= 0.5)
        result = self.test if self.ok else f"failed: {self.error}"
        size = human_size(self.size) if self.size else "-"
        return [
            f"probe {self.key} (not a cell)",
            self.framework_file,
            abi,
            made,
            size,
            f"{self.seconds:.0f} s ({steps})",
            result or "",
            "-",
        ]


def first_error(text: str) -> str:
    """The compiler's or tool's first error line of a failure, else its last line."""
    for line in text.splitlines():
        if re.search(r"(fatal )?error:|Error:", line) and "Failed to build" not in line:
            return re.sub(r"^\S*/native/", "native/", line.strip())[:300]
    return text.strip().splitlines()[-1][:300] if text.strip() else "no output"


def probe(release_version: str, key: str, cache: BuildCache, native: Path, work: Path, jobs: int) -> ProbeRow:
    """Build the binding of a cell CPU-only against its exact framework file and test it; never published."""
    release = load_release(release_version)
    (cell,) = [c for c in release.cells if c.key == f"{release_version}/{key}"]
    assert cell.python is not None
    interpreter = find_interpreter(cell.python)
    client = RegistryClient(DEFAULT_CACHE_DIR / "registry")
    artifact = resolve_framework(cell, cell.python, client).artifact if interpreter else None
    if interpreter is None or artifact is None:
        return ProbeRow(cell.key, cell.build.requirement, None, None, None, 0.0, {}, None, "no interpreter or file")
    facts = read_facts(cell.framework, artifact, client.cache_dir, client.offline)
    facts = facts if isinstance(facts, FrameworkFacts) else None
    cpu = dataclasses.replace(cell, cuda=None)  # the probe's wheel: CPU kernels only, named as a CPU wheel
    steps: dict[str, float] = {}
    started = time.perf_counter()
    backend = None

    def step(name: str, fn):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return fn()
        finally:
            steps[name] = time.perf_counter() - t

    try:
        toolchain = detect_toolchain(None)
        core = step(
            "core", lambda: build_core(native, toolchain, BUILD_TYPE, release_version, cache, jobs, tree_digest)
        )
        spec = read_binding_spec(adapter_for(cell.framework).binding_dir(native))
        envs = step("build env", lambda: ensure_binding_envs(interpreter, artifact, spec, cache))
        backend = envs.backend_python if envs.backend else None
        out = work / "probes" / cell.key.replace("/", "_")
        shutil.rmtree(out, ignore_errors=True)
        raw = step(
            "binding", lambda: build_binding(cpu, spec, envs, core, toolchain, BUILD_TYPE, cache, out / "raw", jobs)
        )
        repaired = step(
            "repair",
            lambda: repair_and_retag(raw, out / "repaired", wheel_filename(cpu), spec.library_path(envs.framework)),
        )
        common = build_common(release.info, cache, native / "runtime")
        sha = file_sha256(repaired.wheel)
        smoke = step("test", lambda: smoke_test(cpu, repaired.wheel, sha, common, interpreter, artifact, cache))
    except Exception as exc:  # a probe reports its failure in the table
        return ProbeRow(
            cell.key, artifact.filename, facts, backend, None, time.perf_counter() - started, steps, None,
            first_error(str(exc)),
        )  # fmt: skip
    return ProbeRow(
        cell.key, artifact.filename, facts, backend, repaired.wheel.stat().st_size, time.perf_counter() - started,
        steps, smoke.output.splitlines()[-1] if smoke.output else "", None,
    )  # fmt: skip


HEADER = ["cell", "framework file", "C++ ABI", "toolkit", "wheel", "build time (steps, s)", "test", "ops library"]


def markdown(rows: list[Row] | list[Row | ProbeRow]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def chosen_cells(only: list[str] | None) -> list[tuple[str, str, str]]:
    """CELLS, or those whose RELEASE/KEY matches one of the globs."""
    if not only:
        return list(CELLS)
    picked = [c for c in CELLS if any(fnmatch.fnmatchcase(f"{c[0]}/{c[1]}", g) for g in only)]
    if not picked:
        raise SystemExit(f"--only {' '.join(only)} matches none of: {', '.join(f'{r}/{k}' for r, k, _ in CELLS)}")
    return picked


def inspect(result: CellResult) -> BinaryReport:
    compiler = result.plan.cuda_compiler
    return inspect_wheel(result.path, compiler.nvcc.parent / "cuobjdump" if compiler else None)


def run(
    work: Path,
    jobs: int,
    uv_cache: Path,
    native: Path,
    probes: bool,
    cells: bool = True,
    probe_cells: list[tuple[str, str]] | None = None,
    only: list[str] | None = None,
) -> list[Row | ProbeRow]:
    shutil.rmtree(work / "cache", ignore_errors=True)
    shutil.rmtree(work / "dist", ignore_errors=True)
    cache = BuildCache(work / "cache", uv_dir=uv_cache)
    client = RegistryClient(DEFAULT_CACHE_DIR / "registry")
    builder = Builder(
        cache,
        work / "dist",
        native_dir=native,
        options=BuildOptions(jobs=jobs),
        progress=lambda m: print(f"  {time.strftime('%H:%M:%S')} {m}", file=sys.stderr, flush=True),
    )
    rows: list[Row | ProbeRow] = []
    table = chosen_cells(only)
    for version in dict.fromkeys(release for release, _, _ in table) if cells else ():
        release = load_release(version)
        wanted = {f"{version}/{key}": expected for rel, key, expected in table if rel == version}
        missing = set(wanted) - {c.key for c in release.cells}
        if missing:
            raise SystemExit(f"release {version} has no cells {sorted(missing)}: update CELLS")
        plan = plan_cells(version, release.cells, client, selected_keys=set(wanted), native_dir=native)
        chosen = [p for p in plan.cells if p.cell.key in wanted]
        report = builder.build(release.info, plan) if plan.to_build else None
        results = {r.plan.cell.key: r for r in report.results} if report else {}
        failures = {f.plan.cell.key: f.error for f in report.failures} if report else {}
        for p in chosen:
            result = results.get(p.cell.key)
            binary = inspect(result) if result is not None else None
            rows.append(Row(p.cell.key, p, wanted[p.cell.key], result, failures.get(p.cell.key), binary))
    for version, key in (probe_cells or PROBES) if probes else ():
        print(f"  {time.strftime('%H:%M:%S')} probe {version}/{key}", file=sys.stderr, flush=True)
        rows.append(probe(version, key, cache, native, work, jobs))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="compile jobs (default 2)")
    parser.add_argument("--work", type=Path, default=REPO_ROOT / "build" / "optin", help="work directory")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--native", type=Path, default=NATIVE_DIR, help="the native/ tree to build (default: this one)")
    parser.add_argument("--no-probes", action="store_true", help="only the cells, no probes")
    parser.add_argument("--no-cells", action="store_true", help="only the probes")
    parser.add_argument(
        "--only", action="append", metavar="GLOB", help="only the cells whose RELEASE/KEY matches (2.0.0/torch-2.6.0/*)"
    )
    parser.add_argument(
        "--uv-cache",
        type=Path,
        default=DEFAULT_CACHE_DIR / "uv",
        help="uv's download cache, shared so frameworks are fetched once (default: the build cache's)",
    )
    parser.add_argument(
        "--probe",
        action="append",
        metavar="RELEASE/KEY",
        help="probe these cells instead (1.5.0/torch-1.4.0/cuda10.1/py3.7/x86_64)",
    )
    args = parser.parse_args()
    if os.environ.get("AIACC_OPTIN") != "1":
        print("opt-in: set AIACC_OPTIN=1 (downloads GBs of frameworks, ~15 min on 2 cores)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    chosen = [(p.split("/", 1)[0], p.split("/", 1)[1]) for p in args.probe] if args.probe else None
    rows = run(
        args.work,
        args.jobs,
        args.uv_cache,
        args.native.resolve(),
        not args.no_probes,
        not args.no_cells,
        chosen,
        args.only,
    )
    print(markdown(rows))
    built = [r for r in rows if isinstance(r, Row) and r.result is not None]
    cells = [r for r in rows if isinstance(r, Row)]
    probes = [r for r in rows if isinstance(r, ProbeRow)]
    print(
        f"\n{len(built)} cells built and tested, {len(cells) - len(built)} not built "
        f"({sum(r.plan.status.value == 'deferred' for r in cells)} deferred by the planner); "
        f"{sum(r.ok for r in probes)} of {len(probes)} probes passed; torch "
        f"{', '.join(sorted({r.plan.cell.framework_version for r in built}))}; Python "
        f"{', '.join(sorted({r.plan.cell.python or '' for r in built}, key=lambda v: tuple(map(int, v.split('.')))))}; "
        f"{time.perf_counter() - started:.0f} s in all, {os.cpu_count()} cores, "
        f"load {open('/proc/loadavg').read().split()[0]} at the end"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    dict(
                        zip(HEADER, r.cells()),
                        ok=r.ok,
                        steps=r.steps if isinstance(r, ProbeRow) else (r.result.steps if r.result else None),
                    )
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
