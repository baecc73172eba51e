"""CPU an idle engine takes: N ranks under perseusrun make an engine, run one allreduce, then sit idle for
--seconds while each rank measures its own process CPU time (all threads: negotiation, streams, Gloo).
Where ranks share few cores, this is CPU that backward and the wire do not get.

    .venv/bin/python bench/engine_idle_cpu.py [--np 4] [--seconds 5] [--before PATH]

The engine library comes from PERSEUS_ENGINE_LIBRARY (else the installed one); --before runs the same with
another build, side by side.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

REPO_ROOT = Path(__file__).resolve().parent.parent


def worker(seconds: float) -> None:
    import array
    import resource
    import time

    from perseus import engine

    eng = engine.Engine.from_environment()
    eng.allreduce("warm-up", array.array("f", [1.0] * 1000))
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    time.sleep(seconds)
    after = resource.getrusage(resource.RUSAGE_SELF)
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print("REPORT " + json.dumps({"rank": eng.rank, "cpu_s_per_s": used / (time.monotonic() - start),
                                  "negotiation_cycles": eng.info()["negotiation_cycles"]}), flush=True)
    eng.close()


def run(np: int, seconds: float, library: Optional[str]) -> List[Dict[str, float]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "native" / "runtime"),
                                                       os.environ.get("PYTHONPATH", "")]))
    if library:
        env["PERSEUS_ENGINE_LIBRARY"] = library
    perseusrun = str(Path(sys.executable).with_name("perseusrun"))
    proc = subprocess.run([perseusrun, "-np", str(np), "--", sys.executable, str(Path(__file__).resolve()),
                           "--worker", "--seconds", str(seconds)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120 + seconds)
    if proc.returncode != 0:
        raise SystemExit("engine_idle_cpu: the job failed (rc {}):\n{}".format(proc.returncode, proc.stderr[-3000:]))
    found = []
    for line in proc.stdout.splitlines():
        if "REPORT " in line:
            found.append(json.loads(line.split("REPORT ", 1)[1]))
    return sorted(found, key=lambda r: r["rank"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--np", type=int, default=4, help="ranks")
    parser.add_argument("--seconds", type=float, default=5.0, help="idle seconds measured")
    parser.add_argument("--before", metavar="PATH", help="also measure this engine library")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.seconds)
        return
    results = {"engine": run(args.np, args.seconds, os.environ.get("PERSEUS_ENGINE_LIBRARY"))}
    if args.before:
        results["before"] = run(args.np, args.seconds, args.before)
    summary = {name: {"cpu_s_per_s_median": statistics.median(r["cpu_s_per_s"] for r in ranks),
                      "negotiation_cycles_per_s": statistics.median(r["negotiation_cycles"] for r in ranks) /
                      args.seconds, "ranks": ranks}
               for name, ranks in results.items()}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print("{} ranks idle for {} s, load average (1 min) {:.2f}".format(args.np, args.seconds, os.getloadavg()[0]))
    for name, s in summary.items():
        print("{:<8} CPU-s per s per rank: median {:.3f} ({})".format(
            name, s["cpu_s_per_s_median"], ", ".join("{:.3f}".format(r["cpu_s_per_s"]) for r in s["ranks"])))
    if "before" in summary:
        print("engine / before: {:.2f}x the CPU".format(
            summary["engine"]["cpu_s_per_s_median"] / summary["before"]["cpu_s_per_s_median"]))


if __name__ == "__main__":
    main()
