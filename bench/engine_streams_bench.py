"""The engine's stream tuner against fixed stream counts, 2 ranks over a rate-limited veth (bench/netns.py).

Variants (each its own pair of processes): PERSEUS_ALLREDUCE_STREAMS=1, =4, and unset (the tuner: the
first large dispatches on 1 stream, the next on 4, keeps the fewest unless more are 3% faster). A step
submits --tensors fp32 tensors of --mib MiB at once and waits for them (fp16 on the wire, the default);
--steps steps, the median of the last --measured. The tuned variant also prints its choice and the figures
every rank agreed on (the slowest rank's seconds per GiB of busy communication).

    sudo .venv/bin/python bench/engine_streams_bench.py [--rate 1gbit] [--steps 30] [--tensors 16] [--mib 2]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netns import ADDRESSES, Link, missing_requirement  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"streams=1": "1", "streams=4": "4", "tuned (limit 4)": None}


def worker(args: argparse.Namespace) -> None:
    from perseus import engine

    rank = int(os.environ["RANK"])
    eng = engine.Engine(rank, 2, 0, 1, rank, ADDRESSES[0], int(os.environ["PERSEUS_MASTER_PORT"]))
    grads = [array.array("f", bytes(args.mib << 20)) for _ in range(args.tensors)]
    times = []
    for step in range(args.steps):
        eng.barrier("step")
        start = time.perf_counter()
        handles = [eng.allreduce_async("g{}".format(k), g, op="average") for k, g in enumerate(grads)]
        for h in handles:
            h.wait()
        times.append(time.perf_counter() - start)
    info = eng.info()
    eng.close()
    if rank == 0:
        print(json.dumps({"step": statistics.median(times[-args.measured:]), "in_use": info["streams_in_use"],
                          "tuning": info["stream_tuning"], "one": info["tuned_seconds_per_gib_one"],
                          "all": info["tuned_seconds_per_gib_all"]}), flush=True)


def run_variant(link: Link, streams, args: argparse.Namespace, port: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PERSEUS_ALLREDUCE_STREAMS"}
    env.update({"PERSEUS_MASTER_PORT": str(port), "GLOO_SOCKET_IFNAME": "eth0",
                "PYTHONPATH": str(REPO_ROOT / "native" / "runtime")})
    env.setdefault("PERSEUS_ENGINE_LIBRARY", str(REPO_ROOT / "native" / "build" / "engine" / "libperseus_engine.so"))
    if streams:
        env["PERSEUS_ALLREDUCE_STREAMS"] = streams
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", "--steps", str(args.steps), "--tensors",
            str(args.tensors), "--mib", str(args.mib), "--measured", str(args.measured)]
    procs = [subprocess.Popen(link.command(r, argv), env=dict(env, RANK=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True) for r in range(2)]
    outputs = [p.communicate(timeout=900) for p in procs]
    for proc, (_, err) in zip(procs, outputs):
        if proc.returncode != 0:
            raise SystemExit("rc {}:\n{}".format(proc.returncode, err[-4000:]))
    return json.loads(outputs[0][0].strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", default="1gbit")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--measured", type=int, default=8, help="the last steps whose median is reported")
    p.add_argument("--tensors", type=int, default=16)
    p.add_argument("--mib", type=int, default=2)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    why = missing_requirement()
    if why:
        raise SystemExit("engine_streams_bench: " + why)
    print("load average: {:.1f} {:.1f} {:.1f}, {} cores; {} x {} MiB per step at {}".format(
        *os.getloadavg(), os.cpu_count(), args.tensors, args.mib, args.rate))
    found = {}
    with Link(args.rate) as link:
        for i, (name, streams) in enumerate(VARIANTS.items()):
            found[name] = run_variant(link, streams, args, 29600 + 10 * i)
            r = found[name]
            extra = ""
            if r["tuning"] == 2:
                extra = "  chose {} (agreed s/GiB: 1 stream {:.3f}, 4 streams {:.3f})".format(r["in_use"], r["one"], r["all"])
            print("{:>16}: {:.4f} s per step, {} stream(s) in use{}".format(name, r["step"], r["in_use"], extra), flush=True)
    best = min(found[n]["step"] for n in ("streams=1", "streams=4"))
    print("tuned vs the better fixed count: {:.2f}x".format(best / found["tuned (limit 4)"]["step"]))


if __name__ == "__main__":
    main()
