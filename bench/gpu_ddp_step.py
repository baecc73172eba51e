"""A DDP training step with CUDA tensors: perseus (`import perseus`, its hook on the engine's device path) against
torch's own `fp16_compress_hook`, the same model and data, steps alternating between the two variants.

Two ranks share the one GPU of a lent machine under the gloo backend (NCCL refuses a shared GPU), so perseus
takes device compression + Gloo through host memory. The baseline is configured as its users would: DDP's
defaults (25 MiB buckets, no bucket views) with `register_comm_hook(None, fp16_compress_hook)`.

Reports (rank 0, one `REPORT {json}` line): the median step of each variant (CUDA events, >= 20 steps after
warm-up), their ratio, the largest relative loss difference between the variants, and from one profiled step
of each: device-to-host bytes (the profiler's memcpy records) against the fp32 gradient size, and the
cudaDeviceSynchronize calls on the training thread.

    python bench/gpu_ddp_step.py [--steps 30] [--warmup 5] [--ranks 2] [--json FILE]   # spawns the ranks
"""

import argparse
import copy
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_model(torch, width: int, depth: int):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, 1024))
    return torch.nn.Sequential(*layers)


def trace_figures(path: str, main_tid: int) -> Dict[str, int]:
    """Memcpy bytes and cudaDeviceSynchronize calls inside the step (the `bench_step` range: the profiler's own
    synchronisation when it stops comes after it)."""
    with open(path) as handle:
        events = [e for e in json.load(handle).get("traceEvents", []) if e.get("ph") == "X"]
    steps = [e for e in events if e.get("name") == "bench_step"]
    begin = min(e["ts"] for e in steps) if steps else float("-inf")
    end = max(e["ts"] + e.get("dur", 0) for e in steps) if steps else float("inf")
    d2h = h2d = device_syncs = device_syncs_main = 0
    for e in events:
        name = str(e.get("name", ""))
        if name.startswith("Memcpy DtoH"):
            d2h += int(e.get("args", {}).get("bytes", 0))
        elif name.startswith("Memcpy HtoD"):
            h2d += int(e.get("args", {}).get("bytes", 0))
        elif name == "cudaDeviceSynchronize" and begin <= e["ts"] <= end:
            device_syncs += 1
            device_syncs_main += int(e.get("tid") == main_tid)
    return {"d2h_bytes": d2h, "h2d_bytes": h2d, "cudaDeviceSynchronize": device_syncs,
            "cudaDeviceSynchronize_training_thread": device_syncs_main, "step_range_found": int(bool(steps))}


def rank_main(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    import perseus  # noqa: F401  (wraps DistributedDataParallel: the perseus variant below gets its hook)

    rank, size = dist.get_rank(), dist.get_world_size()
    cuda = args.device == "cuda"
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    ids = [0] if cuda else None
    torch.manual_seed(0)
    base = build_model(torch, args.width, args.depth).to(device)
    params = sum(p.numel() for p in base.parameters())
    variants = {
        "perseus": DDP(copy.deepcopy(base), device_ids=ids),
        "torch_fp16_hook": DDP(copy.deepcopy(base), device_ids=ids, bucket_cap_mb=25, gradient_as_bucket_view=False),
    }
    variants["torch_fp16_hook"].register_comm_hook(None, default_hooks.fp16_compress_hook)
    optimizers = {k: torch.optim.SGD(m.parameters(), lr=args.lr) for k, m in variants.items()}

    def batch(step: int):
        g = torch.Generator(device="cpu").manual_seed(1000 * step + rank)
        x = torch.randn(args.batch, args.width, generator=g)
        y = torch.randn(args.batch, 1024, generator=g)
        return x.to(device, non_blocking=True), y.to(device, non_blocking=True)

    def one_step(name: str, step: int):
        model, opt = variants[name], optimizers[name]
        x, y = batch(step)
        if not cuda:  # the CPU smoke run of this script
            began = time.perf_counter()
            opt.zero_grad(set_to_none=False)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return (time.perf_counter() - began) * 1e3, loss.detach()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        end.record()
        end.synchronize()  # cudaEventSynchronize: the timing's own wait, never a device-wide one
        return start.elapsed_time(end), loss.detach()

    times: Dict[str, List[float]] = {k: [] for k in variants}
    losses: Dict[str, List[float]] = {k: [] for k in variants}
    order = list(variants)
    for step in range(args.warmup + args.steps):
        for name in (order if step % 2 == 0 else order[::-1]):
            ms, loss = one_step(name, step)
            losses[name].append(float(loss))
            if step >= args.warmup:
                times[name].append(ms)

    profiled: Dict[str, Dict[str, int]] = {}
    from torch.profiler import ProfilerActivity, profile, record_function
    step = args.warmup + args.steps
    for name in order:
        with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
            with record_function("bench_step"):
                one_step(name, step)
        path = os.path.join(tempfile.gettempdir(), "perseus_ddp_{}_{}.json".format(name, rank))
        prof.export_chrome_trace(path)
        profiled[name] = trace_figures(path, threading.get_native_id())

    rel = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses["perseus"], losses["torch_fp16_hook"]))
    medians = {k: statistics.median(v) for k, v in times.items()}
    report = {
        "rank": rank, "size": size, "device": torch.cuda.get_device_name(0) if cuda else "cpu", "torch": torch.__version__,
        "parameters": params, "fp32_gradient_bytes": params * 4, "steps": args.steps, "warmup": args.warmup,
        "median_ms": medians, "perseus_vs_torch": medians["torch_fp16_hook"] / medians["perseus"],
        "step_ms": times, "loss_first_last": {k: (v[0], v[-1]) for k, v in losses.items()},
        "max_relative_loss_difference": rel, "profiled_step": profiled,
        "perseus_engine": perseus_engine_info(),
    }
    print("REPORT " + json.dumps(report), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def perseus_engine_info() -> Dict[str, object]:
    from perseus.torch import _comm
    world = _comm.current()
    if world is None:
        return {}
    return {"policy": world.describe_policy(), "wire": {k: list(v) for k, v in world.wire().items()}}


def launch(args: argparse.Namespace) -> int:
    port = free_port()
    procs = []
    for r in range(args.ranks):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(args.ranks), LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   PYTHONUNBUFFERED="1")
        procs.append(subprocess.Popen([sys.executable, __file__, "--rank-worker"] + sys.argv[1:], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True))
    outputs = [p.communicate(timeout=args.timeout) for p in procs]
    codes = [p.returncode for p in procs]
    found = [line[len("REPORT "):] for out, _ in outputs for line in out.splitlines() if line.startswith("REPORT ")]
    if any(codes) or not found:
        for r, (out, err) in enumerate(outputs):
            print("rank {} exit {}:\n{}\n{}".format(r, codes[r], out[-3000:], err[-3000:]))
        return 1
    report = json.loads(found[0])
    print("REPORT " + json.dumps(report))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=1)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps per variant (after the warm-up)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--ranks", type=int, default=2, help="ranks, all on GPU 0")
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--depth", type=int, default=2, help="hidden layers of width x width (2: 37.8 M parameters)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--timeout", type=float, default=400)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: a smoke run of this script")
    parser.add_argument("--json", default="", help="write rank 0's report here")
    parser.add_argument("--rank-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_worker:
        rank_main(args)
        return 0
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
