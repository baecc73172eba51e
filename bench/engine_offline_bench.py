"""PERSEUS_OFFLINE_NEG=0 vs 1: what the per-cycle negotiation costs the native engine.

perseusrun jobs of --np ranks on 127.0.0.1 (no framework), fp32 on the wire (PERSEUS_ALLREDUCE_DTYPE=1),
the same names every step (what the offline plan needs). Two measurements per job, rank 0 reports:
  latency   one 4-element allreduce submitted and waited for at a time (a SyncBN-like statistic),
            --reps times; median microseconds per collective
  step      --tensors allreduces of --elements fp32 each, all submitted then all waited for (a
            training step of many small gradients); median milliseconds per step over --steps
The first 3 iterations of each are a warm-up (online negotiation until the plan is agreed).

    .venv/bin/python bench/engine_offline_bench.py [--np 2,4] [--reps 2000] [--steps 50] [--tensors 200]
"""

import argparse
import array
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
WARMUP = 3


def worker(reps: int, steps: int, tensors: int, elements: int) -> None:
    from perseus import engine

    eng = engine.Engine.from_environment(wire_dtype=1)
    stat = array.array("f", [1.0] * 4)
    lat = []
    for i in range(reps + WARMUP):
        start = time.perf_counter()
        eng.allreduce("bn/stat", stat)
        if i >= WARMUP:
            lat.append(time.perf_counter() - start)
    grads = [array.array("f", [1.0] * elements) for _ in range(tensors)]
    step_times = []
    for i in range(steps + WARMUP):
        eng.barrier("step-begin")  # every rank starts the step together
        start = time.perf_counter()
        handles = [eng.allreduce_async("g/{}".format(k), g) for k, g in enumerate(grads)]
        for h in handles:
            h.wait()
        if i >= WARMUP:
            step_times.append(time.perf_counter() - start)
    info = eng.info()
    if eng.rank == 0:
        print("RESULT " + json.dumps({
            "latency_us": statistics.median(lat) * 1e6, "step_ms": statistics.median(step_times) * 1e3,
            "offline": info["offline"], "cycles": info["negotiation_cycles"], "offline_batches": info["offline_batches"]}),
            flush=True)
    eng.close()


def run(np: int, offline: int, args: argparse.Namespace) -> dict:
    env = dict(os.environ, PERSEUS_OFFLINE_NEG=str(offline), PYTHONPATH=str(REPO_ROOT / "native" / "runtime"))
    env.setdefault("PERSEUS_ENGINE_LIBRARY", str(REPO_ROOT / "native" / "build" / "engine" / "libperseus_engine.so"))
    for name in ("MASTER_PORT", "PERSEUS_MASTER_PORT"):
        env.pop(name, None)
    perseusrun = str(Path(sys.executable).with_name("perseusrun"))
    cmd = [perseusrun, "-np", str(np), "--", sys.executable, __file__, "--worker", "--reps", str(args.reps),
           "--steps", str(args.steps), "--tensors", str(args.tensors), "--elements", str(args.elements)]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=900)
    for line in proc.stdout.splitlines():
        if "RESULT " in line:
            return json.loads(line.split("RESULT ", 1)[1])
    raise SystemExit("the {}-rank job failed (rc {}):\n{}\n{}".format(np, proc.returncode, proc.stdout[-2000:],
                                                                      proc.stderr[-3000:]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--np", default="2,4")
    p.add_argument("--reps", type=int, default=2000)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--tensors", type=int, default=200)
    p.add_argument("--elements", type=int, default=256)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.reps, args.steps, args.tensors, args.elements)
        return
    print("load average: {:.1f} {:.1f} {:.1f}, {} cores".format(*os.getloadavg(), os.cpu_count()))
    print("| ranks | latency online us | latency offline us | ratio | step online ms | step offline ms | ratio |")
    print("|------:|------:|------:|------:|------:|------:|------:|")
    for np in [int(n) for n in args.np.split(",")]:
        online, offline = run(np, 0, args), run(np, 1, args)
        assert offline["offline"] == 1, offline
        print("| {} | {:.0f} | {:.0f} | {:.2f}x | {:.2f} | {:.2f} | {:.2f}x |".format(
            np, online["latency_us"], offline["latency_us"], online["latency_us"] / offline["latency_us"],
            online["step_ms"], offline["step_ms"], online["step_ms"] / offline["step_ms"]), flush=True)
        print("  (negotiation cycles: online {}, offline {}; offline batches {})".format(
            online["cycles"], offline["cycles"], offline["offline_batches"]), flush=True)


if __name__ == "__main__":
    main()
