"""Exit soak: how often a 2-rank job whose ranks finished their work still exits other than 0.

Runs each variant N times under perseusrun (one job at a time) and prints, per variant, the number of
non-zero exits and the exit codes seen; the plain-torch variants (no `import perseus`) are printed beside
the perseus ones. Not a test: it takes minutes.

    .venv/bin/python bench/exit_soak.py [--runs 100] [--variants ddp-perseus-destroy,...] [--json]
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

REPO_ROOT = Path(__file__).resolve().parents[1]
WORKER = str(Path(__file__).resolve().with_name("exit_worker.py"))
SOURCES = [REPO_ROOT / "native" / "runtime", REPO_ROOT / "native" / "bindings" / "torch"]
VARIANTS: Dict[str, List[str]] = {
    "ddp-perseus-destroy": ["ddp", "--perseus", "--destroy"],
    "ddp-perseus-no-destroy": ["ddp", "--perseus"],
    "hvd-no-shutdown": ["hvd"],
    "ddp-plain-destroy": ["ddp", "--destroy"],
    "ddp-plain-no-destroy": ["ddp"],
}


def run_once(argv: List[str], timeout: float) -> int:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in SOURCES), OMP_NUM_THREADS="1")
    perseusrun = [sys.executable, "-m", "perseus.run", "-np", "2", sys.executable, WORKER] + argv
    try:
        done = subprocess.run(perseusrun, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1  # reported as a hang
    if done.returncode != 0:
        sys.stderr.write("--- exit {} ---\n{}\n".format(done.returncode, done.stdout[-2000:]))
    return done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        parser.error("unknown variant(s) {}; choose from {}".format(", ".join(unknown), ", ".join(VARIANTS)))
    results = {}
    for variant in chosen:
        codes: "collections.Counter[int]" = collections.Counter()
        started = time.monotonic()
        for _ in range(args.runs):
            codes[run_once(VARIANTS[variant], args.timeout)] += 1
        failed = sum(n for code, n in codes.items() if code != 0)
        results[variant] = {"runs": args.runs, "nonzero": failed, "codes": dict(codes),
                            "seconds": round(time.monotonic() - started, 1)}
        print("{:24s} {:4d} runs  {:3d} non-zero  codes {}  ({:.0f} s)".format(
            variant, args.runs, failed, dict(codes), results[variant]["seconds"]), flush=True)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
