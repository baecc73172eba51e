"""Exit soak: how often a 2-rank job whose ranks finished their work still exits other than 0.

Runs each variant N times under perseusrun (one job at a time, the variants taking turns, so that a run
stopped early has even counts) and prints, per variant, the number of non-zero exits and the exit codes
seen, after every round and at the end; the plain-torch variants (no `import perseus`) are printed beside
the perseus ones. A run also fails (code -2) when its ranks did not take the path the variant is about: the
perseus variants must run on the native engine, joined to the store perseusrun serves, with perseus's
completion thread (DDP's hook) in use; the plain ones must never load perseus. A hang is code -1.
--parallel N runs N jobs at a time (each on its own free ports), for a busy machine. Not a test: it takes minutes.

    .venv/bin/python bench/exit_soak.py [--runs 100] [--parallel 1] [--variants ddp-perseus-destroy,...] [--json]
"""

import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List

REPO_ROOT = Path(__file__).resolve().parents[1]
WORKER = str(Path(__file__).resolve().with_name("exit_worker.py"))
SOURCES = [REPO_ROOT / "native" / "runtime", REPO_ROOT / "native" / "bindings" / "torch"]
ENGINE_PATH = "path: engine rank {}/2 store perseusrun completions {}"
EXPECTED_PATHS: Dict[str, List[str]] = {
    "ddp-perseus-destroy": [ENGINE_PATH.format(r, "ran") for r in range(2)],
    "ddp-perseus-no-destroy": [ENGINE_PATH.format(r, "ran") for r in range(2)],
    "hvd-no-shutdown": [ENGINE_PATH.format(r, "idle") for r in range(2)],
    "ddp-plain-destroy": ["path: plain torch"] * 2,
    "ddp-plain-no-destroy": ["path: plain torch"] * 2,
}
WRONG_PATH = -2
VARIANTS: Dict[str, List[str]] = {
    "ddp-perseus-destroy": ["ddp", "--perseus", "--destroy"],
    "ddp-perseus-no-destroy": ["ddp", "--perseus"],
    "hvd-no-shutdown": ["hvd"],
    "ddp-plain-destroy": ["ddp", "--destroy"],
    "ddp-plain-no-destroy": ["ddp"],
}


def run_once(variant: str, timeout: float) -> int:
    argv = VARIANTS[variant]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in SOURCES), OMP_NUM_THREADS="1")
    perseusrun = [sys.executable, "-m", "perseus.run", "-np", "2", sys.executable, WORKER] + argv
    try:
        done = subprocess.run(perseusrun, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1  # reported as a hang
    code = done.returncode
    paths = sorted(line[line.index("path: "):].strip() for line in done.stdout.splitlines() if "path: " in line)
    if code == 0 and paths != sorted(EXPECTED_PATHS[variant]):
        code = WRONG_PATH
    if code != 0:
        sys.stderr.write("--- {} exit {} ---\n{}\n".format(variant, code, done.stdout[-2000:]))
    return code


def _failed(codes: "collections.Counter[int]") -> int:
    return sum(n for code, n in codes.items() if code != 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--parallel", type=int, default=1, help="jobs at a time (the variants of a round)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        parser.error("unknown variant(s) {}; choose from {}".format(", ".join(unknown), ", ".join(VARIANTS)))
    codes: Dict[str, "collections.Counter[int]"] = {v: collections.Counter() for v in chosen}
    seconds: Dict[str, float] = {v: 0.0 for v in chosen}

    def timed(variant: str) -> None:
        started = time.monotonic()
        code = run_once(variant, args.timeout)
        with lock:
            codes[variant][code] += 1
            seconds[variant] += time.monotonic() - started

    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        for round_number in range(1, args.runs + 1):
            for done in [pool.submit(timed, variant) for variant in chosen]:
                done.result()
            print("after round {}: {}".format(round_number, "; ".join(
                "{} {}/{} non-zero".format(v, _failed(codes[v]), round_number) for v in chosen)), flush=True)
    results = {v: {"runs": args.runs, "nonzero": _failed(codes[v]), "codes": dict(codes[v]),
                   "seconds": round(seconds[v], 1)} for v in chosen}
    for variant, found in results.items():
        print("{:24s} {:4d} runs  {:3d} non-zero  codes {}  ({:.0f} s)".format(
            variant, found["runs"], found["nonzero"], found["codes"], found["seconds"]), flush=True)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
