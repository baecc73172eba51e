"""The native engine's allreduce vs torch.distributed's Gloo allreduce over a rate-limited link.

2 ranks in two network namespaces joined by a veth pair shaped to --rate (bench/netns.py), buffers of
--sizes MiB of fp32. Variants, each in its own pair of processes:
  engine_fp32     perseus engine, PERSEUS_ALLREDUCE_DTYPE=1 (fp32 on the wire)
  engine_fp16     perseus engine, PERSEUS_ALLREDUCE_DTYPE=0 (compress with scale, fp16 allreduce, decompress)
  torch_fp32      torch.distributed Gloo allreduce of the fp32 tensor (the baseline)
  torch_fp16      torch.distributed Gloo allreduce of an already-fp16 tensor (the floor of any fp16 variant)
Each variant reports the median seconds per allreduce (and in brackets the 10th percentile: what a loaded
machine still allows) and the bytes rank 0 sent per allreduce (eth0's
tx_bytes: fp16 on the wire shows as half the bytes). torch is needed only for the torch variants.
--fusion is the engine's PERSEUS_ALLREDUCE_FUSION (-1 automatic: a buffer above 2 MiB travels as 2 MiB
slices through the stream's pipeline, 4 MiB before 2026-11-24 14:30 UTC; 0: one collective, as the figures before 2026-11-24 08:00 UTC).
--before PATH also runs the engine variants with the engine library at PATH (a build of another commit),
as engine_fp32@before / engine_fp16@before, in the same run; --before-runtime DIR gives those variants that
commit's Python handle (its native/runtime) when its C ABI differs.

    sudo .venv/bin/python bench/engine_allreduce_bench.py [--sizes 1,4,16,64,256] [--reps 5] [--fusion -1]
        [--before PATH [--before-runtime DIR]] [--json]
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
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netns import ADDRESSES, Link, missing_requirement, tx_bytes  # noqa: E402
from rank_procs import rank0_report  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("engine_fp32", "engine_fp16", "torch_fp32", "torch_fp16")
MIB = 1 << 20


def worker(variant: str, sizes: List[int], reps: int, same_names: bool = False, fusion: int = -1) -> None:
    rank = int(os.environ["RANK"])
    results = []
    if variant.startswith("engine"):
        from perseus import engine

        chosen = {} if fusion < 0 else {"fusion": fusion}  # unset: automatic (spelled alike by every engine version)
        eng = engine.Engine(rank, 2, 0, 1, rank, ADDRESSES[0], int(os.environ["PERSEUS_MASTER_PORT"]),
                            wire_dtype=0 if variant == "engine_fp16" else 1, streams=1, **chosen)
        for mib in sizes:
            buf = array.array("f", bytes(mib * MIB))
            times, sent = [], []
            for rep in range(reps + 1):  # the first is a warm-up
                # the same names every rep (what PERSEUS_OFFLINE_NEG=1 needs to skip negotiation) or new ones
                eng.barrier("b{}".format(mib) if same_names else "b{}-{}".format(mib, rep))
                before, start = tx_bytes(), time.perf_counter()
                eng.allreduce("x{}".format(mib) if same_names else "x{}-{}".format(mib, rep), buf, op="average")
                took, bytes_sent = time.perf_counter() - start, tx_bytes() - before
                if rep:
                    times.append(took)
                    sent.append(bytes_sent)
            results.append({"mib": mib, "seconds": statistics.median(times), "sent": statistics.median(sent),
                            "p10": sorted(times)[len(times) // 10]})
        eng.close()
    else:
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo", rank=rank, world_size=2)
        dtype = torch.float16 if variant == "torch_fp16" else torch.float32
        for mib in sizes:
            t = torch.zeros(mib * MIB // 4, dtype=dtype)
            times, sent = [], []
            for rep in range(reps + 1):
                dist.barrier()
                before, start = tx_bytes(), time.perf_counter()
                dist.all_reduce(t)
                if dtype == torch.float32:
                    t.div_(2)
                took, bytes_sent = time.perf_counter() - start, tx_bytes() - before
                if rep:
                    times.append(took)
                    sent.append(bytes_sent)
            results.append({"mib": mib, "seconds": statistics.median(times), "sent": statistics.median(sent),
                            "p10": sorted(times)[len(times) // 10]})
        dist.destroy_process_group()
    if rank == 0:
        print(json.dumps({"variant": variant, "results": results}), flush=True)


def run_variant(link: Link, variant: str, args: argparse.Namespace, port: int) -> Dict[str, object]:
    env = dict(os.environ)
    runtime = REPO_ROOT / "native" / "runtime"
    if variant.endswith("@before"):
        env["PERSEUS_ENGINE_LIBRARY"] = args.before
        runtime = Path(args.before_runtime) if args.before_runtime else runtime
    env.update({"WORLD_SIZE": "2", "MASTER_ADDR": ADDRESSES[0], "MASTER_PORT": str(port),
                "PERSEUS_MASTER_PORT": str(port + 1), "GLOO_SOCKET_IFNAME": "eth0", "OMP_NUM_THREADS": "1",
                "PYTHONPATH": os.pathsep.join([str(runtime), env.get("PYTHONPATH", "")])})
    procs = []
    for rank in range(2):
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", variant.split("@")[0], "--sizes", args.sizes,
                "--fusion", str(args.fusion)] + (
            ["--same-names"] if args.same_names else []) + [
                "--reps", str(args.reps)]
        procs.append(subprocess.Popen(link.command(rank, argv), env=dict(env, RANK=str(rank)),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True))
    return rank0_report(procs, args.timeout, variant)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--sizes", default="1,4,16,64,256", help="buffer sizes in MiB of fp32, comma-separated")
    parser.add_argument("--reps", type=int, default=5, help="measured allreduces per size (after one warm-up)")
    parser.add_argument("--rate", default="1gbit", help="tbf rate of each side of the link")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="which variants, comma-separated")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per variant")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--same-names", action="store_true",
                        help="engine: one name per size for every rep (with PERSEUS_OFFLINE_NEG=1: the offline plan)")
    parser.add_argument("--fusion", type=int, default=-1, help="engine PERSEUS_ALLREDUCE_FUSION (-1 automatic)")
    parser.add_argument("--before", metavar="PATH", help="also run the engine variants with this engine library")
    parser.add_argument("--before-runtime", metavar="DIR",
                        help="with --before: the perseus-common source (native/runtime) of that library's commit, "
                             "for a library of another C ABI version")
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        worker(args.worker, sizes, args.reps, args.same_names, args.fusion)
        return
    why = missing_requirement()
    if why:
        raise SystemExit("engine_allreduce_bench: " + why)
    if not os.environ.get("PERSEUS_ENGINE_LIBRARY"):
        built = REPO_ROOT / "native" / "build" / "engine" / "libperseus_engine.so"
        os.environ["PERSEUS_ENGINE_LIBRARY"] = str(built)
    variants = [v for v in args.variants.split(",") if v]
    if args.before:  # each right after its own: drift of the machine hits both alike
        variants = [x for v in variants for x in ([v, v + "@before"] if v.startswith("engine") else [v])]
    found = {}
    with Link(args.rate) as link:
        for i, variant in enumerate(variants):
            found[variant] = {r["mib"]: r for r in run_variant(link, variant, args, 29400 + 10 * i)["results"]}
    if args.json:
        print(json.dumps(found, indent=1))
        return
    print("load average (1 min) at the end: {:.2f}; engine fusion {}".format(os.getloadavg()[0], args.fusion))
    print("{:>6} {}".format("MiB", " ".join("{:>32}".format(v) for v in variants)))
    for mib in sizes:  # median, the 10th percentile (what a loaded machine still allows), MB sent by rank 0
        cells = ["{:8.4f} s ({:.4f}) {:7.1f} MB".format(found[v][mib]["seconds"], found[v][mib]["p10"],
                                                       found[v][mib]["sent"] / 1e6) for v in variants]
        print("{:>6} {}".format(mib, " ".join("{:>32}".format(c) for c in cells)))
    if all(v in found for v in VARIANTS):
        print("\nspeed-up vs torch Gloo fp32 (engine fp32 target >= 0.95x, engine fp16 >= 1.8x at >= 16 MiB) and "
              "engine fp16 vs the torch fp16 floor (target >= 0.95x):")
        for mib in sizes:
            base = found["torch_fp32"][mib]["seconds"]
            print("{:>6} MiB: engine_fp32 {:.2f}x  engine_fp16 {:.2f}x  fp16 vs floor {:.2f}x".format(
                mib, base / found["engine_fp32"][mib]["seconds"], base / found["engine_fp16"][mib]["seconds"],
                found["torch_fp16"][mib]["seconds"] / found["engine_fp16"][mib]["seconds"]))
    for v in [v for v in variants if v.endswith("@before")]:
        now = v.split("@")[0]
        print("{} after vs before: {}".format(now, "  ".join("{} MiB {:.2f}x".format(
            mib, found[v][mib]["seconds"] / found[now][mib]["seconds"]) for mib in sizes)))


if __name__ == "__main__":
    main()
