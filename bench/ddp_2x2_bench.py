"""DDP across two "nodes": 4 ranks, 2 per network namespace, the namespaces joined by a 1 Gbit/s veth.

Ranks 0,1 run in namespace a (10.77.0.1), ranks 2,3 in namespace b (10.77.0.2) (bench/netns.py, the shared
harness); inside a namespace the ranks talk over its own loopback, between them over the shaped veth. Every
variant trains ddp_bench.py's MLP (14.6 M parameters) with its batch, side by side in one run:

  plain             fp32 DDP (torch's Gloo allreduce)
  torch_fp16_hook   DDP with torch's fp16_compress_hook
  perseus_dtype0    perseus, PERSEUS_ALLREDUCE_DTYPE=0 (fp16, one level)
  perseus_dtype0_mode1   PERSEUS_ALLREDUCE_DTYPE=0 PERSEUS_ALLREDUCE_MODE=1 (fp16, two levels)
  perseus_dtype2    PERSEUS_ALLREDUCE_DTYPE=2 (fp32 inside a node, fp16 between nodes)

Each variant's floor = its forward + its wire time alone (the same reduction of all gradients with no
compute: torch's allreduce of one fp32 / fp16 tensor, or the perseus engine's allreduce of one fp32 buffer
under the variant's policy) + its optimizer step. Once per round the 4 ranks also train with no
communication at all (the model without DDP, 4 at once as in the variants): forward + backward + optimizer
on the machine's cores, the compute bound no variant can beat where the ranks share few cores; each
variant's bound is the larger of its floor and that. Bytes crossing the slow link per step are counted on the
link (both namespaces' eth0 tx_bytes). The CPU seconds all 4 ranks spend per step (every thread, user + system,
from each process's clock), divided by the machine's cores, is the step's CPU bound: where it nears the step,
the ranks' compute and the wire's copies compete for the cores. Needs root.

--also VAR=VALUE[,...] runs every selected perseus variant a second time with these settings too (e.g.
PERSEUS_ENGINE_LIBRARY=<another build> for a before/after pair in one run); --profile has the engine print
the busy seconds of each stage of its stream pipelines during the wire-alone runs (PERSEUS_ENGINE_PROFILE=1)
and prints them per rank and allreduce: where a variant's wire time goes.

    sudo .venv/bin/python bench/ddp_2x2_bench.py [--steps 10] [--rounds 3] [--rate 1gbit] [--also ...] [--profile]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ddp_bench import SOURCES, build_model  # noqa: E402
from netns import ADDRESSES, Link, missing_requirement, tx_bytes  # noqa: E402

VARIANTS = {
    "plain": {},
    "torch_fp16_hook": {},
    "perseus_dtype0": {"PERSEUS_ALLREDUCE_DTYPE": "0"},
    "perseus_dtype0_mode1": {"PERSEUS_ALLREDUCE_DTYPE": "0", "PERSEUS_ALLREDUCE_MODE": "1"},
    "perseus_dtype2": {"PERSEUS_ALLREDUCE_DTYPE": "2"},
}
COMPUTE_ALONE = "compute_alone"  # no DDP, no communication: the 4 ranks' compute on the shared cores


def wire_worker(variant: str, steps: int, warmup: int) -> Dict[str, object]:
    """The variant's reduction of all gradients alone, per step."""
    import torch
    import torch.distributed as dist

    numel = sum(p.numel() for p in build_model().parameters())
    times: List[float] = []
    cpu: List[float] = []
    if variant.startswith("perseus"):
        from perseus.torch import _comm
        world = _comm.world()
        flat = torch.ones(numel)
        for step in range(warmup + steps):
            dist.barrier()
            start, cpu_start = time.perf_counter(), time.process_time()
            world.engine.allreduce_async("wire", _comm.buffer_of(flat), op="average").wait()
            if step >= warmup:
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - cpu_start)
        return {"times": times, "cpu": cpu, "policy": world.describe_policy()}
    flat = torch.ones(numel, dtype=torch.float16 if variant == "torch_fp16_hook" else torch.float32)
    for step in range(warmup + steps):
        dist.barrier()
        start, cpu_start = time.perf_counter(), time.process_time()
        dist.all_reduce(flat)
        if step >= warmup:
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu_start)
    return {"times": times, "cpu": cpu}


def train_worker(variant: str, steps: int, warmup: int, batch: int) -> Dict[str, object]:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = build_model()
    ddp = model if variant == COMPUTE_ALONE else DDP(model)
    if variant == "torch_fp16_hook":
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
        ddp.register_comm_hook(None, fp16_compress_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    rank = dist.get_rank()
    teacher = torch.randn(1024, 1000, generator=torch.Generator().manual_seed(7))
    times: List[float] = []
    cpu: List[float] = []
    phases: Dict[str, List[float]] = {"forward": [], "optimizer": []}
    loss_value = float("nan")
    sent_before = 0
    for step in range(warmup + steps):
        if step == warmup:
            dist.barrier()
            sent_before = tx_bytes()
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(batch, 1024, generator=g)
        y = (x @ teacher).argmax(dim=1)
        start, cpu_start = time.perf_counter(), time.process_time()
        optimizer.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        forward_end = time.perf_counter()
        loss.backward()
        backward_end = time.perf_counter()
        optimizer.step()
        end, cpu_end = time.perf_counter(), time.process_time()
        loss_value = loss.item()
        if step >= warmup:
            times.append(end - start)
            cpu.append(cpu_end - cpu_start)
            phases["forward"].append(forward_end - start)
            phases["optimizer"].append(end - backward_end)
    dist.barrier()
    sent = (tx_bytes() - sent_before) / max(1, steps)
    state = getattr(ddp, "_perseus_state", None)
    return {"times": times, "cpu": cpu, "phases": phases, "loss": loss_value, "sent_per_step": sent,
            "policy": state.policy if state is not None else None}


def worker(args: argparse.Namespace) -> None:
    variant = args.worker
    if variant.startswith("perseus"):
        import perseus  # noqa: F401
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    found = (wire_worker(variant, args.steps, args.warmup) if args.wire
             else train_worker(variant, args.steps, args.warmup, args.batch))
    found.update(rank=dist.get_rank(), variant=variant, wire=args.wire)
    if int(os.environ["LOCAL_RANK"]) == 0:  # one report per namespace: its eth0 counts its node's bytes out
        print("REPORT " + json.dumps(found), flush=True)
    dist.destroy_process_group()


PROFILE_PREFIX = "perseus-engine-profile "


def base_variant(variant: str) -> str:
    return variant.split("[", 1)[0]


def run(link: Link, variant: str, wire: bool, args: argparse.Namespace, port: int) -> List[Dict[str, object]]:
    env = dict(os.environ)
    env.update(VARIANTS.get(base_variant(variant), {}))
    if "[" in variant:  # perseus_dtype2[A=1,B=2]: the --also settings
        env.update(item.split("=", 1) for item in variant[variant.index("[") + 1:-1].split(","))
    if wire and args.profile:
        env["PERSEUS_ENGINE_PROFILE"] = "1"
    env.update({"WORLD_SIZE": "4", "MASTER_ADDR": ADDRESSES[0], "MASTER_PORT": str(port),
                "PERSEUS_MASTER_PORT": str(port + 1), "GLOO_SOCKET_IFNAME": "eth0", "OMP_NUM_THREADS": "1",
                "LOCAL_WORLD_SIZE": "2",
                "PYTHONPATH": os.pathsep.join([str(p) for p in SOURCES] + [env.get("PYTHONPATH", "")])})
    procs = []
    for rank in range(4):
        node = rank // 2
        rank_env = dict(env, RANK=str(rank), LOCAL_RANK=str(rank % 2), GROUP_RANK=str(node))
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", base_variant(variant), "--steps", str(args.steps),
                "--warmup", str(args.warmup), "--batch", str(args.batch)] + (["--wire"] if wire else [])
        procs.append(subprocess.Popen(link.command(node, argv), env=rank_env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=args.timeout) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        if proc.returncode != 0:
            raise SystemExit("{}{} failed (rc {}):\n{}".format(variant, " (wire)" if wire else "", proc.returncode,
                                                               err[-4000:]))
    reports = []
    profiles = []
    for out, err in outputs:
        for line in out.splitlines():
            if line.startswith("REPORT "):
                reports.append(json.loads(line[len("REPORT "):]))
        profiles += [json.loads(line[len(PROFILE_PREFIX):]) for line in err.splitlines()
                     if line.startswith(PROFILE_PREFIX)]
    reports = sorted(reports, key=lambda r: r["rank"])
    if reports:
        reports[0]["profiles"] = profiles
    return reports


def machine_cpu(reports: List[Dict[str, object]]) -> float:
    """CPU seconds the 4 ranks spent per step (user + system, every thread), from the two reporting ranks (local
    rank 0 of each node) with their node peer counted alike: the ranks of a node do the same work."""
    per_node = [statistics.median(r["cpu"]) for r in reports]  # type: ignore[arg-type]
    return sum(per_node) * 4 / len(per_node)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="measured steps per variant and round")
    parser.add_argument("--warmup", type=int, default=5, help="steps before measuring")
    parser.add_argument("--batch", type=int, default=32, help="batch size per rank (ddp_bench's)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every variant, interleaved")
    parser.add_argument("--rate", default="1gbit", help="tbf rate of each side of the link")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--only", action="append", choices=list(VARIANTS), help="run only these variants")
    parser.add_argument("--also", action="append", default=[], metavar="VAR=VALUE[,VAR=VALUE]",
                        help="also run every selected perseus variant with these settings (repeatable)")
    parser.add_argument("--profile", action="store_true", help="print the engine's stage times of the wire runs")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", choices=list(VARIANTS) + [COMPUTE_ALONE], help=argparse.SUPPRESS)
    parser.add_argument("--wire", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    problem = missing_requirement()
    if problem:
        raise SystemExit("ddp_2x2_bench " + problem)
    names = args.only or list(VARIANTS)
    names += ["{}[{}]".format(v, extra) for extra in args.also for v in list(names) if v.startswith("perseus")]
    stage_busy: Dict[str, Dict[str, List[float]]] = {v: {} for v in names}  # "rank r: stage" -> s per allreduce
    steps: Dict[str, List[float]] = {v: [] for v in names}
    wires: Dict[str, List[float]] = {v: [] for v in names}
    forward: Dict[str, List[float]] = {v: [] for v in names}
    optim: Dict[str, List[float]] = {v: [] for v in names}
    sent: Dict[str, List[float]] = {v: [] for v in names}
    loss: Dict[str, float] = {}
    policy: Dict[str, object] = {}
    compute: List[float] = []
    cpu_wire: Dict[str, List[float]] = {v: [] for v in names}  # CPU seconds of all 4 ranks per step
    cpu_step: Dict[str, List[float]] = {v: [] for v in names}
    cpu_compute: List[float] = []
    load = []
    port = 29600
    with Link(args.rate) as link:
        for round_index in range(args.rounds):
            port += 10
            reports = run(link, COMPUTE_ALONE, False, args, port)
            compute += reports[0]["times"]
            cpu_compute.append(machine_cpu(reports))
            print("round {} compute alone (no communication): step {:.4f} s".format(
                round_index + 1, statistics.median(compute[-args.steps:])), file=sys.stderr, flush=True)
            shift = round_index % len(names)
            for variant in names[shift:] + names[:shift]:
                load.append(os.getloadavg()[0])
                port += 10
                reports = run(link, variant, True, args, port)
                wires[variant] += reports[0]["times"]
                cpu_wire[variant].append(machine_cpu(reports))
                for prof in reports[0]["profiles"]:
                    for stage, seconds in prof["busy_s"].items():
                        key = "rank {} stream {}: {}".format(prof["rank"], prof["stream"], stage)
                        stage_busy[variant].setdefault(key, []).append(seconds / (args.warmup + args.steps))
                port += 10
                reports = run(link, variant, False, args, port)
                steps[variant] += reports[0]["times"]
                cpu_step[variant].append(machine_cpu(reports))
                forward[variant] += reports[0]["phases"]["forward"]
                optim[variant] += reports[0]["phases"]["optimizer"]
                sent[variant].append(sum(r["sent_per_step"] for r in reports))  # both directions of the link
                loss[variant] = reports[0]["loss"]
                policy[variant] = reports[0]["policy"]
                print("round {} {}: step {:.4f} s, wire alone {:.4f} s (medians of this run; load {:.1f})".format(
                    round_index + 1, variant, statistics.median(reports[0]["times"]), statistics.median(wires[variant][-args.steps:]),
                    load[-1]), file=sys.stderr, flush=True)
    med = statistics.median
    rows = {}
    for v in names:
        floor = med(forward[v]) + med(wires[v]) + med(optim[v])
        bound = max(floor, med(compute))
        rows[v] = {"step_s": med(steps[v]), "wire_alone_s": med(wires[v]), "floor_s": floor,
                   "cpu_s_per_step": med(cpu_step[v]), "wire_cpu_s": med(cpu_wire[v]),
                   "step_over_floor": med(steps[v]) / floor, "bound_s": bound, "step_over_bound": med(steps[v]) / bound,
                   "mb_on_link_per_step": med(sent[v]) / 1e6,
                   "loss": loss[v], "policy": policy[v],
                   "stage_busy_s_per_allreduce": {k: med(x) for k, x in sorted(stage_busy[v].items())}}
    summary = {"link": "2 namespaces x 2 ranks, veth tbf {} each way".format(args.rate),
               "parameters": sum(p.numel() for p in build_model().parameters()), "batch_per_rank": args.batch,
               "rounds": args.rounds, "steps": args.steps, "load_average_1min": [round(x, 2) for x in load],
               "compute_alone_s": med(compute), "compute_alone_cpu_s": med(cpu_compute), "cores": os.cpu_count(),
               "rows": rows}
    if "torch_fp16_hook" in rows and "perseus_dtype2" in rows:
        summary["dtype2_vs_torch_fp16_hook"] = rows["torch_fp16_hook"]["step_s"] / rows["perseus_dtype2"]["step_s"]
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(summary["link"])
    print("model: MLP of {:,} parameters, batch {} per rank, 4 ranks; {} rounds x {} steps after {} warm-up; "
          "load average (1 min) during the runs: median {:.2f}, max {:.2f}".format(
              summary["parameters"], args.batch, args.rounds, args.steps, args.warmup, med(load), max(load)))
    print("compute alone (forward + backward + optimizer, 4 ranks at once, no communication): {:.4f} s, "
          "{:.3f} CPU-s per step on {} cores".format(summary["compute_alone_s"], summary["compute_alone_cpu_s"],
                                                      summary["cores"]))
    print("{:<22} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>12} {:>10}".format(
        "variant", "step (s)", "vs plain", "wire (s)", "floor (s)", "step/floor", "step/bound", "MB link/step",
        "loss"))
    plain = rows.get("plain", {}).get("step_s")
    for v in names:
        r = rows[v]
        print("{:<22} {:>10.4f} {:>9.2f}x {:>10.4f} {:>10.4f} {:>11.2f}x {:>11.2f}x {:>12.2f} {:>10.5f}".format(
            v, r["step_s"], plain / r["step_s"] if plain else float("nan"), r["wire_alone_s"], r["floor_s"],
            r["step_over_floor"], r["step_over_bound"], r["mb_on_link_per_step"], r["loss"]))
    print("CPU seconds per step, all 4 ranks (every thread, user + system); / cores = the step's CPU bound:")
    for v in names:
        r = rows[v]
        print("    {:<22} step {:.3f} CPU-s (/ {} cores = {:.4f} s), wire alone {:.3f} CPU-s".format(
            v, r["cpu_s_per_step"], summary["cores"], r["cpu_s_per_step"] / summary["cores"], r["wire_cpu_s"]))
    for v in names:
        if rows[v]["policy"]:
            print("{}: {}".format(v, rows[v]["policy"]))
    for v in names:
        if rows[v]["stage_busy_s_per_allreduce"]:
            print("{}: engine stage busy seconds per allreduce of all gradients (wire runs):".format(v))
            for key, seconds in rows[v]["stage_busy_s_per_allreduce"].items():
                print("    {:<60} {:.4f}".format(key, seconds))
    if "dtype2_vs_torch_fp16_hook" in summary:
        print("perseus DTYPE=2 vs torch fp16_compress_hook: {:.2f}x (target >= 1.3x); DTYPE=2 step / its floor: "
              "{:.2f}x (target <= 1.10x)".format(summary["dtype2_vs_torch_fp16_hook"],
                                                 rows["perseus_dtype2"]["step_over_floor"]))


if __name__ == "__main__":
    main()
