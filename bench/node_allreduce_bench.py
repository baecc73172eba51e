"""The native engine's fp32 allreduce among the ranks of one node: shared memory vs loopback TCP vs torch's Gloo.

--ranks processes on this machine (one node), buffers of --sizes MiB of fp32, the average of every rank's.
Variants, each in its own set of processes:
  engine_shm   perseus engine, PERSEUS_ALLREDUCE_DTYPE=1: its groups inside a node exchange through shared memory
  engine_tcp   the same with PERSEUS_SHM_DISABLE=1: Gloo's TCP on loopback (the engine before shared memory)
  torch_gloo   torch.distributed's Gloo allreduce of the fp32 tensor, then the division (what a torch user runs)
Each reports the median seconds per allreduce (in brackets the 10th percentile) and the CPU seconds each rank
spent per allreduce (every thread of the process, user + system): on a machine whose cores the ranks share,
CPU that communication takes is CPU the ranks' compute does not get.

    .venv/bin/python bench/node_allreduce_bench.py [--ranks 2] [--sizes 1,4,16,64] [--reps 20] [--json]
"""

import argparse
import array
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rank_procs import rank0_report  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("engine_shm", "engine_tcp", "torch_gloo")
MIB = 1 << 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(run_once, reps: int) -> Dict[str, float]:
    times, cpu = [], []
    for rep in range(reps + 1):  # the first is a warm-up
        start, cpu_start = time.perf_counter(), time.process_time()
        run_once(rep)
        if rep:
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu_start)
    return {"seconds": statistics.median(times), "p10": sorted(times)[len(times) // 10],
            "cpu": statistics.median(cpu)}


def worker(variant: str, ranks: int, sizes: List[int], reps: int) -> None:
    rank = int(os.environ["RANK"])
    results = []
    if variant.startswith("engine"):
        from perseus import engine

        eng = engine.Engine(rank, ranks, rank, ranks, 0, "127.0.0.1", int(os.environ["PERSEUS_MASTER_PORT"]),
                            wire_dtype=1, streams=1, shm_disable=int(variant != "engine_shm"))
        groups = eng.info()
        for mib in sizes:
            buf = array.array("f", bytes(mib * MIB))

            def once(rep: int) -> None:
                eng.barrier("b{}-{}".format(mib, rep))
                eng.allreduce("x{}-{}".format(mib, rep), buf, op="average")

            results.append(dict(measure(once, reps), mib=mib))
        eng.close()
        transport = "{} of {} node groups on shared memory".format(groups["shared_memory_groups"],
                                                                    groups["node_groups"])
    else:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        dist.init_process_group("gloo", rank=rank, world_size=ranks)
        for mib in sizes:
            t = torch.zeros(mib * MIB // 4)

            def once(rep: int) -> None:
                dist.barrier()
                dist.all_reduce(t)
                t.div_(ranks)

            results.append(dict(measure(once, reps), mib=mib))
        dist.destroy_process_group()
        transport = "torch.distributed gloo"
    if rank == 0:
        print(json.dumps({"variant": variant, "transport": transport, "results": results}), flush=True)


def run_variant(variant: str, args: argparse.Namespace) -> Dict[str, object]:
    env = dict(os.environ, WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               PERSEUS_MASTER_PORT=str(free_port()), OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "native" / "runtime"), os.environ.get("PYTHONPATH", "")]))
    procs = []
    for rank in range(args.ranks):
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", variant, "--ranks", str(args.ranks),
                "--sizes", args.sizes, "--reps", str(args.reps)]
        procs.append(subprocess.Popen(argv, env=dict(env, RANK=str(rank)), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True))
    return rank0_report(procs, args.timeout, variant)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--ranks", type=int, default=2, help="processes on this machine")
    parser.add_argument("--sizes", default="1,4,16,64", help="buffer sizes in MiB of fp32, comma-separated")
    parser.add_argument("--reps", type=int, default=20, help="measured allreduces per size (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of every variant, interleaved")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="which variants, comma-separated")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per variant")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        worker(args.worker, args.ranks, sizes, args.reps)
        return
    if not os.environ.get("PERSEUS_ENGINE_LIBRARY"):
        built = REPO_ROOT / "native" / "build" / "engine" / "libperseus_engine.so"
        if built.is_file():
            os.environ["PERSEUS_ENGINE_LIBRARY"] = str(built)
    variants = [v for v in args.variants.split(",") if v]
    runs = {v: [] for v in variants}  # type: Dict[str, List[Dict[str, object]]]
    transport = {}
    for _ in range(args.rounds):
        for variant in variants:
            found = run_variant(variant, args)
            transport[variant] = found["transport"]
            runs[variant].append({r["mib"]: r for r in found["results"]})
    # per size: the median over rounds of each round's median
    table = {v: {mib: {k: statistics.median(run[mib][k] for run in runs[v]) for k in ("seconds", "p10", "cpu")}
                 for mib in sizes} for v in variants}
    if args.json:
        print(json.dumps({"ranks": args.ranks, "transport": transport, "results": table}, indent=1))
        return
    print("{} ranks on one node ({} cores), {} rounds x {} allreduces per size; load average (1 min) at the end "
          "{:.2f}".format(args.ranks, os.cpu_count(), args.rounds, args.reps, os.getloadavg()[0]))
    for v in variants:
        print("  {}: {}".format(v, transport[v]))
    print("{:>6} {}".format("MiB", " ".join("{:>34}".format(v) for v in variants)))
    for mib in sizes:
        cells = ["{:8.4f} s ({:.4f}) {:6.3f} CPU-s".format(table[v][mib]["seconds"], table[v][mib]["p10"],
                                                           table[v][mib]["cpu"]) for v in variants]
        print("{:>6} {}".format(mib, " ".join("{:>34}".format(c) for c in cells)))
    for other in [v for v in ("engine_tcp", "torch_gloo") if v in table and "engine_shm" in table]:
        print("engine_shm vs {}: {}".format(other, "  ".join(
            "{} MiB {:.2f}x time, {:.2f}x CPU".format(mib, table[other][mib]["seconds"] / table["engine_shm"][mib]["seconds"],
                                                    table[other][mib]["cpu"] / max(table["engine_shm"][mib]["cpu"], 1e-9))
            for mib in sizes)))


if __name__ == "__main__":
    main()
