"""Time to render every cell of every release, and a no-op re-render, against a naive baseline.

Baseline: a fresh Jinja environment per file (every template recompiled) and every file written
unconditionally. Measured: templates compiled once per process, only changed bytes written.
Run: .venv/bin/python bench/render_bench.py [--repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from aiacc_build.matrix import load_all
from aiacc_build.render import BuildHost, render_release, render_release_to
from aiacc_build.render import templates


def _timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    releases = load_all()
    load_s = time.perf_counter() - start
    host = BuildHost.detect()
    cells = sum(len(r.cells) for r in releases)
    work = Path(tempfile.mkdtemp(prefix="render-bench-"))
    try:
        cached_env = templates.environment

        def measured_cold() -> None:
            shutil.rmtree(work / "m", ignore_errors=True)
            for r in releases:
                render_release_to(r.info, r.cells, work / "m" / r.info.version, host)

        def measured_noop() -> None:
            for r in releases:
                render_release_to(r.info, r.cells, work / "m" / r.info.version, host)

        def baseline_full() -> None:
            templates.environment = lambda: cached_env.__wrapped__()  # a new environment per file
            try:
                for r in releases:
                    out = work / "b" / r.info.version
                    for f in render_release(r.info, r.cells, host):
                        (out / f.path).parent.mkdir(parents=True, exist_ok=True)
                        (out / f.path).write_bytes(f.data)
            finally:
                templates.environment = cached_env

        cached_env.cache_clear()
        start = time.perf_counter()
        measured_cold()
        first_s = time.perf_counter() - start  # includes compiling every template once
        files = sum(1 for p in (work / "m").rglob("*") if p.is_file() and not p.name.startswith("."))
        full_s = _timed(measured_cold, args.repeat)
        noop_s = _timed(measured_noop, args.repeat)
        base_s = _timed(baseline_full, args.repeat)
        base_noop_s = base_s  # the baseline rewrites every file on every run
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"releases: {len(releases)}  cells: {cells}  files: {files}  (matrix load {load_s * 1000:.1f} ms)")
    print(f"{'':34}{'measured':>12}{'baseline':>12}{'ratio':>9}")
    print(f"{'first render (compiles templates)':34}{first_s * 1000:>10.1f}ms{'':>12}")
    print(f"{'full render into an empty folder':34}{full_s * 1000:>10.1f}ms{base_s * 1000:>10.1f}ms{base_s / full_s:>8.1f}x")
    print(f"{'no-op re-render':34}{noop_s * 1000:>10.1f}ms{base_noop_s * 1000:>10.1f}ms{base_noop_s / noop_s:>8.1f}x")
    print(f"per cell (full render): {full_s / cells * 1e6:.0f} us")


if __name__ == "__main__":
    main()
