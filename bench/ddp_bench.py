"""DDP step time over a rate-limited link: perseus vs plain fp32 DDP vs torch's fp16_compress_hook.

Two ranks run in two network namespaces joined by a veth pair (10.77.0.1 <-> 10.77.0.2, named eth0
inside, traffic only between them), each side shaped with `tc qdisc ... tbf rate 1gbit`: a small
model of the seed's 32 Gbit/s VPC. Every variant trains the same model on the same data with
default PERSEUS_* settings; the bench prints the median step time, the loss after the last step and
the speed-up against plain DDP and against torch's hook, side by side. Needs root (ip netns, tc);
the namespaces are removed at the end, also on failure.

    sudo .venv/bin/python bench/ddp_bench.py [--steps 12] [--rate 1gbit] [--json]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netns import ADDRESSES, Link, tx_bytes  # noqa: E402  (the shared netns harness)
from rank_procs import rank0_report  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCES = [REPO_ROOT / "native" / "runtime", REPO_ROOT / "native" / "bindings" / "torch"]
VARIANTS = ("plain", "torch_fp16_hook", "perseus")
WIRE = "fp16_allreduce_alone"  # the model's gradients as ONE fp16 allreduce, no compute: the wire's floor


# ---- a rank ---------------------------------------------------------------------------------------

def build_model() -> "torch.nn.Module":
    import torch.nn as nn

    return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 2048), nn.ReLU(), nn.Linear(2048, 1000))


def wire_worker(steps: int, warmup: int) -> None:
    """Time one fp16 allreduce of `numel` elements per step: what the link alone needs for the gradients."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    half = torch.ones(sum(p.numel() for p in build_model().parameters()), dtype=torch.float16)
    times: List[float] = []
    for step in range(warmup + steps):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(half)
        if step >= warmup:
            times.append(time.perf_counter() - start)
    if dist.get_rank() == 0:
        print(json.dumps({"variant": WIRE, "times": times}), flush=True)
    dist.destroy_process_group()


def worker(variant: str, steps: int, warmup: int, batch: int) -> None:
    if variant == "perseus":
        import perseus  # noqa: F401  (the only change a DDP user makes)
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = build_model()
    ddp = DDP(model)
    if variant == "torch_fp16_hook":
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
        ddp.register_comm_hook(None, fp16_compress_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    rank = dist.get_rank()
    teacher = torch.randn(1024, 1000, generator=torch.Generator().manual_seed(7))  # a learnable labelling
    times: List[float] = []
    cpu: List[float] = []
    phases: Dict[str, List[float]] = {"forward": [], "backward": [], "optimizer": []}
    loss_value = float("nan")
    sent_before = 0
    for step in range(warmup + steps):
        if step == warmup:
            sent_before = tx_bytes()
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(batch, 1024, generator=g)
        y = (x @ teacher).argmax(dim=1)
        start, start_cpu = time.perf_counter(), time.process_time()
        optimizer.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        forward_end = time.perf_counter()
        loss.backward()  # returns when every bucket's reduction finished (DDP waits for them)
        backward_end = time.perf_counter()
        optimizer.step()
        end, elapsed_cpu = time.perf_counter(), time.process_time() - start_cpu
        loss_value = loss.item()
        if step >= warmup:
            times.append(end - start)
            cpu.append(elapsed_cpu)
            phases["forward"].append(forward_end - start)
            phases["backward"].append(backward_end - forward_end)
            phases["optimizer"].append(end - backward_end)
    sent_per_step = (tx_bytes() - sent_before) / max(1, steps)
    state = getattr(ddp, "_perseus_state", None)
    streams = None
    if state is not None and hasattr(state, "engine"):  # the Python engine of earlier perseus.torch builds
        streams = state.engine.tuner.describe()
    elif state is not None:  # the native engine
        info = state.world.engine.info()
        streams = "{} stream(s) in use of {}, {}".format(info.get("streams_in_use", info["streams"]), info["streams"],
                                                         state.policy)
    numel = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(json.dumps({"variant": variant, "times": times, "cpu": cpu, "loss": loss_value, "parameters": numel,
                          "sent_per_step": sent_per_step, "phases": phases, "streams": streams}), flush=True)
    dist.destroy_process_group()


def run_variant(link: Link, variant: str, args: argparse.Namespace, port: int) -> Dict[str, object]:
    env = dict(os.environ)
    worker_variant = variant
    if variant.startswith("perseus["):  # perseus with extra PERSEUS_* settings: perseus[A=1,B=2]
        worker_variant = "perseus"
        env.update(item.split("=", 1) for item in variant[len("perseus["):-1].split(","))
    env.update({"WORLD_SIZE": "2", "MASTER_ADDR": ADDRESSES[0], "MASTER_PORT": str(port),
                "PERSEUS_MASTER_PORT": str(port + 1), "GLOO_SOCKET_IFNAME": "eth0", "OMP_NUM_THREADS": "1",
                "PYTHONPATH": os.pathsep.join([str(p) for p in SOURCES] + [env.get("PYTHONPATH", "")])})
    procs = []
    for rank, ns in enumerate(link.namespaces):
        rank_env = dict(env, RANK=str(rank), LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", GROUP_RANK=str(rank))
        command = ["ip", "netns", "exec", ns, sys.executable, str(Path(__file__).resolve()), "--worker", worker_variant,
                   "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch)]
        procs.append(subprocess.Popen(command, env=rank_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    return rank0_report(procs, args.timeout, variant)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=12, help="measured steps per variant")
    # 10, as Horovod's synthetic benchmark (it covered the stream tuning of the Python engine of earlier perseus.torch builds,
    # 1 then 4 streams over its first 8 steps, for every variant alike)
    parser.add_argument("--warmup", type=int, default=10, help="steps before measuring")
    parser.add_argument("--batch", type=int, default=32, help="batch size per rank")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every variant, interleaved")
    parser.add_argument("--rate", default="1gbit", help="tbf rate of each side of the link")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per variant")
    parser.add_argument("--also", action="append", default=[], metavar="VAR=VALUE[,VAR=VALUE]",
                        help="also run perseus with these PERSEUS_* settings (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--worker", choices=VARIANTS + (WIRE,), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == WIRE:
        wire_worker(args.steps, args.warmup)
        return
    if args.worker:
        worker(args.worker, args.steps, args.warmup, args.batch)
        return
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None:
        raise SystemExit("ddp_bench needs root and iproute2 (ip, tc) to build its two network namespaces")
    variants = VARIANTS + tuple("perseus[{}]".format(extra) for extra in args.also)
    results: Dict[str, Dict[str, object]] = {}
    wire_times: List[float] = []
    port = 29400
    with Link(args.rate) as link:
        for round_index in range(args.rounds):  # variants interleaved, so that drift of the machine hits all alike
            shift = round_index % len(variants)
            order = variants[shift:] + variants[:shift]
            port += 10
            wire_times += run_variant(link, WIRE, args, port)["times"]
            for variant in order:
                port += 10
                found = run_variant(link, variant, args, port)
                merged = results.setdefault(variant, {"times": [], "cpu": [], "sent": [], "phases": {}})
                for phase, values in found["phases"].items():
                    merged["phases"].setdefault(phase, []).extend(values)
                merged["times"] += found["times"]
                merged["cpu"] += found["cpu"]
                merged["sent"].append(found["sent_per_step"])
                merged.update(loss=found["loss"], parameters=found["parameters"])
                if found.get("streams"):
                    merged.setdefault("streams", []).append(found["streams"])
    for merged in results.values():
        merged["median"] = statistics.median(merged["times"])
        merged["cpu_median"] = statistics.median(merged["cpu"])
        merged["sent_median"] = statistics.median(merged["sent"])
    plain, hook, perseus = (results[v]["median"] for v in VARIANTS)
    wire = statistics.median(wire_times)
    phase_medians = {v: {phase: statistics.median(values) for phase, values in results[v]["phases"].items()}
                     for v in variants}
    # No variant sending fp16 can step faster than: its forward (nothing to send yet) + the fp16 allreduce
    # alone + its optimizer step (it needs the reduced gradients). Backward overlaps the wire.
    floor = {v: phase_medians[v]["forward"] + wire + phase_medians[v]["optimizer"] for v in variants}
    summary = {
        "link": "veth between two namespaces, tbf rate {} each way".format(args.rate),
        "parameters": results["perseus"]["parameters"], "batch_per_rank": args.batch, "steps": args.steps,
        "rounds": args.rounds,
        "median_step_s": {v: round(results[v]["median"], 4) for v in variants},
        "median_cpu_s_per_step_rank0": {v: round(results[v]["cpu_median"], 4) for v in variants},
        "loss_after_steps": {v: round(results[v]["loss"], 5) for v in variants},
        "mb_sent_per_step_rank0": {v: round(results[v]["sent_median"] / 1e6, 2) for v in variants},
        "speedup_vs_plain": {v: round(plain / results[v]["median"], 3) for v in variants},
        "perseus_vs_torch_fp16_hook": round(hook / perseus, 3),
        "fp16_allreduce_alone_s": round(wire, 4),
        "median_phase_s": {v: {k: round(t, 4) for k, t in phase_medians[v].items()} for v in variants},
        "fp16_floor_s": {v: round(floor[v], 4) for v in variants},
        "perseus_streams": {v: results[v]["streams"] for v in variants if results[v].get("streams")},
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(summary["link"])
    print("model: MLP of {:,} parameters, batch {} per rank, 2 ranks; {} rounds x {} measured steps after {} warm-up"
          .format(summary["parameters"], args.batch, args.rounds, args.steps, args.warmup))
    width = max(len(v) for v in variants) + 2
    print("{:<{w}} {:>16} {:>10} {:>18} {:>20} {:>16}".format("variant", "median step (s)", "vs plain", "loss after steps",
                                                             "CPU s/step (rank 0)", "MB sent/step", w=width))
    for v in variants:
        print("{:<{w}} {:>16.4f} {:>9.2f}x {:>18.5f} {:>20.4f} {:>16.2f}".format(
            v, results[v]["median"], plain / results[v]["median"], results[v]["loss"], results[v]["cpu_median"],
            results[v]["sent_median"] / 1e6, w=width))
    print("perseus vs torch fp16_compress_hook: {:.2f}x".format(hook / perseus))
    print()
    print("where the step goes (medians, s): backward includes waiting for the reductions")
    print("{:<{w}} {:>9} {:>9} {:>10} {:>22}".format("variant", "forward", "backward", "optimizer",
                                                      "fp16 floor (f+wire+o)", w=width))
    for v in variants:
        ph = phase_medians[v]
        print("{:<{w}} {:>9.4f} {:>9.4f} {:>10.4f} {:>22.4f}".format(
            v, ph["forward"], ph["backward"], ph["optimizer"], floor[v], w=width))
    for v, choices in summary["perseus_streams"].items():
        print("{} streams in use, per run: {}".format(v, "; ".join(choices)))
    print("one fp16 allreduce of all {:,} gradients alone, no compute: {:.4f} s; perseus is {:.1f} ms above its floor, "
          "the hook {:.1f} ms above its own".format(summary["parameters"], wire, (perseus - floor["perseus"]) * 1e3,
                                                    (hook - floor["torch_fp16_hook"]) * 1e3))


if __name__ == "__main__":
    main()
