"""Gluon training over a 1 Gbit/s link: perseus (hvd.DistributedTrainer) vs MXNet's own dist_sync KVStore.

2 worker ranks, one per namespace of the shared netns harness (bench/netns.py), each on its own synthetic
data (fw_pair.batches, as tf_mwms_bench.py), a Gluon MLP of 14.6 M parameters (1024-4096-2048-1000), SGD with
momentum, the same Gluon loop for every variant (autograd.record, backward, trainer.step, then
mx.nd.waitall(): MXNet runs asynchronously, the step ends when its results exist):

  perseus          import perseus.mxnet as hvd; hvd.init(); hvd.DistributedTrainer(params, "sgd", ...),
                   hvd.broadcast_parameters; default PERSEUS_* (fp16 on the wire)
  dist_sync        mx.kv.create("dist_sync") through ps-lite as compiled into the pip mxnet 1.9.1 wheel: a
                   scheduler and one server started (`import mxnet` with DMLC_ROLE=scheduler / server) in
                   worker 0's namespace, DMLC_PS_ROOT_URI/PORT, DMLC_NUM_SERVER=1, DMLC_NUM_WORKER=2, as
                   MXNet's tools/launch.py sets them; gluon.Trainer(..., kvstore=kv) with its defaults (the
                   update runs on the server); trainer.step(global batch) so that a step averages as Horovod's
  perseus_dtype1   perseus with PERSEUS_ALLREDUCE_DTYPE=1 (fp32 on the wire)

Per variant and round its wire time alone is measured too (its reduction of fp32 arrays shaped as the
gradients, nothing else running: the engine's grouped allreduce as DistributedTrainer submits it, or
kv.push + kv.pull of every key), and once per round the compute alone (both ranks training locally at
once, no communication). Floor = compute + wire alone. Loss: after training, on a fixed evaluation batch.
Needs root and the MXNet environment (`bash native/bindings/mxnet/dev_env.sh`: .venv-mxnet, Python 3.9).

    sudo .venv/bin/python bench/mxnet_dist_sync_bench.py [--steps 15] [--warmup 5] [--rounds 3]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fw_pair import FEATURES, Link, Rounds, batches, print_table, report, run_pair, tx_bytes  # noqa: E402
from netns import ADDRESSES, missing_requirement  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
MXNET_PYTHON = REPO_ROOT / ".venv-mxnet" / "bin" / "python"
VARIANTS = {"perseus": {}, "dist_sync": {}, "perseus_dtype1": {"PERSEUS_ALLREDUCE_DTYPE": "1"}}


# ---- a rank -------------------------------------------------------------------------------------

def build_net():
    import mxnet as mx
    from mxnet.gluon import nn

    mx.random.seed(0)
    net = nn.Sequential()
    net.add(nn.Dense(4096, activation="relu", in_units=FEATURES), nn.Dense(2048, activation="relu", in_units=4096),
            nn.Dense(1000, in_units=2048))
    net.initialize(mx.init.Xavier())
    return net


def train(net, trainer, xs, ys, warmup: int, step_batch: int):
    import mxnet as mx

    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    times = []
    for index, (x, y) in enumerate(zip(xs, ys)):
        x, y = mx.nd.array(x), mx.nd.array(y)
        start = time.perf_counter()
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(step_batch)
        mx.nd.waitall()
        if index >= warmup:
            times.append(time.perf_counter() - start)
    return times


def evaluate(net, eval_x, eval_y) -> Dict[str, float]:
    import mxnet as mx
    import numpy as np

    loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()(net(mx.nd.array(eval_x)), mx.nd.array(eval_y)).mean()
    weights = sum(float(np.abs(p.data().asnumpy()).sum()) for p in net.collect_params().values())
    return {"loss": float(loss.asscalar()), "weights_abs_sum": weights}


def sgd() -> Dict[str, float]:
    return {"learning_rate": 0.05, "momentum": 0.9}


def grads_like(net):
    import mxnet as mx

    return [mx.nd.ones(p.shape) for p in net.collect_params().values()]


def timed_wire(reduce_once, warmup: int, steps: int, barrier) -> Dict[str, object]:
    times, sent = [], 0
    for step in range(warmup + steps):
        barrier(step)
        start, before = time.perf_counter(), tx_bytes()
        reduce_once(step)
        if step >= warmup:
            times.append(time.perf_counter() - start)
        sent = tx_bytes() - before
    return {"times": times, "sent": sent}


def perseus_rank(args, rank, xs, ys, eval_x, eval_y) -> Dict[str, object]:
    import mxnet as mx
    import perseus.mxnet as hvd
    from perseus.mxnet import collectives
    from perseus.mxnet.process_sets import Group

    hvd.init()
    net = build_net()
    if args.phase == "wire":  # the gradient path DistributedTrainer takes (the engine's wire policy), timed alone
        grads = grads_like(net)
        names = ["wire.%d" % i for i in range(len(grads))]
        group = Group(None, "bench wire")
        found = timed_wire(lambda step: (collectives._gradient_allreduce_(grads, False, names, group),
                                         mx.nd.waitall()),
                           args.warmup, args.steps, lambda step: hvd.allreduce(mx.nd.zeros(1), name="b%d" % step))
    else:
        trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", sgd())
        hvd.broadcast_parameters(net.collect_params(), root_rank=0)
        before = tx_bytes()
        times = train(net, trainer, xs, ys, args.warmup, args.batch)
        found = dict(evaluate(net, eval_x, eval_y), times=times, sent=(tx_bytes() - before) / len(xs))
    hvd.shutdown()
    return found


def dist_sync_rank(args, rank, xs, ys, eval_x, eval_y) -> Dict[str, object]:
    import mxnet as mx

    kv = mx.kv.create("dist_sync")
    assert kv.num_workers == 2, kv.num_workers
    if kv.rank != rank:  # ps-lite numbers the workers in the order they reach the scheduler: its rank's data
        xs, ys, eval_x, eval_y = batches(kv.rank, len(xs), args.batch)
    net = build_net()
    if args.phase == "wire":
        grads = grads_like(net)
        keys = list(range(len(grads)))
        kv.init(keys, grads)
        kv.init(len(keys), mx.nd.zeros(1))

        def push_pull(step):
            kv.push(keys, grads)
            kv.pull(keys, out=grads)
            mx.nd.waitall()

        def barrier(step):
            kv.push(len(keys), mx.nd.zeros(1))
            kv.pull(len(keys), out=mx.nd.zeros(1))
            mx.nd.waitall()

        found = timed_wire(push_pull, args.warmup, args.steps, barrier)
    else:
        trainer = mx.gluon.Trainer(net.collect_params(), "sgd", sgd(), kvstore=kv)
        before = tx_bytes()
        times = train(net, trainer, xs, ys, args.warmup, args.batch * kv.num_workers)
        found = dict(evaluate(net, eval_x, eval_y), times=times, sent=(tx_bytes() - before) / len(xs),
                     update_on_kvstore=bool(trainer._update_on_kvstore))
    kv._barrier()
    return found


def compute_rank(args, rank, xs, ys, eval_x, eval_y) -> Dict[str, object]:
    import mxnet as mx

    net = build_net()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", sgd(), kvstore=None)
    return {"times": train(net, trainer, xs, ys, args.warmup, args.batch)}


def worker(args: argparse.Namespace) -> None:
    rank = int(os.environ["RANK"])
    data = batches(rank, args.warmup + args.steps, args.batch)
    run = {"compute": compute_rank, "dist_sync": dist_sync_rank}.get(args.worker, perseus_rank)
    found = run(args, rank, *data)
    found.update(rank=rank, variant=args.worker, phase=args.phase)
    report(found)


# ---- the runner ---------------------------------------------------------------------------------

def run(link: Link, variant: str, phase: str, args: argparse.Namespace, port: int) -> List[Dict[str, object]]:
    env = dict(os.environ)
    env.update(VARIANTS.get(variant, {}))
    env.update({"WORLD_SIZE": "2", "MASTER_ADDR": ADDRESSES[0], "PERSEUS_MASTER_PORT": str(port),
                "LOCAL_WORLD_SIZE": "1", "LOCAL_RANK": "0", "OMP_NUM_THREADS": str(args.threads),
                "MXNET_CPU_WORKER_NTHREADS": str(args.threads),
                "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "native" / "runtime"), env.get("PYTHONPATH", "")])})
    servers = []
    if variant == "dist_sync":
        # what tools/launch.py exports: the scheduler's address, the number of servers and workers
        env.update({"DMLC_PS_ROOT_URI": ADDRESSES[0], "DMLC_PS_ROOT_PORT": str(port + 1), "DMLC_NUM_SERVER": "1",
                    "DMLC_NUM_WORKER": "2", "DMLC_INTERFACE": "eth0"})
        for role in ("scheduler", "server"):
            servers.append(subprocess.Popen(link.command(0, [str(args.mxnet_python), "-c", "import mxnet"]),
                                            env=dict(env, DMLC_ROLE=role), stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        env["DMLC_ROLE"] = "worker"
    envs = [dict(env, RANK=str(rank), GROUP_RANK=str(rank)) for rank in range(2)]
    argv = [str(args.mxnet_python), str(Path(__file__).resolve()), "--worker", variant, "--phase", phase,
            "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch)]
    try:
        return run_pair(link, [argv, argv], envs, args.timeout, "{} ({})".format(variant, phase))
    finally:
        for server in servers:  # they leave when the workers finalise the store; never left behind
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=15, help="measured steps per variant and round")
    parser.add_argument("--warmup", type=int, default=5, help="steps before measuring")
    parser.add_argument("--batch", type=int, default=32, help="batch per rank (global batch: 2x)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every variant, interleaved")
    parser.add_argument("--threads", type=int, default=1, help="OMP / MXNet CPU worker threads per rank")
    parser.add_argument("--rate", default="1gbit", help="tbf rate of each side of the link")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--mxnet-python", type=Path, default=MXNET_PYTHON, help="Python of the MXNet environment")
    parser.add_argument("--only", action="append", choices=list(VARIANTS), help="run only these variants")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", choices=list(VARIANTS) + ["compute"], help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=("train", "wire"), default="train", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    problem = missing_requirement()
    if problem:
        raise SystemExit("mxnet_dist_sync_bench " + problem)
    if not args.mxnet_python.is_file():
        raise SystemExit("mxnet_dist_sync_bench: no MXNet environment at {}; run `bash native/bindings/mxnet/dev_env.sh` or pass "
                         "--mxnet-python".format(args.mxnet_python))
    names = args.only or list(VARIANTS)
    rounds, port = Rounds(), 30500
    with Link(args.rate) as link:
        for index in range(args.rounds):
            rounds.note_load()
            port += 10
            rounds.add_steps("compute", run(link, "compute", "train", args, port)[0]["times"])
            for variant in names[index % len(names):] + names[:index % len(names)]:
                rounds.note_load()
                port += 10
                wire = run(link, variant, "wire", args, port)
                rounds.add(variant, "wire_s", sorted(wire[1]["times"])[len(wire[1]["times"]) // 2])
                rounds.add(variant, "wire_sent", wire[1]["sent"])
                port += 10
                reports = run(link, variant, "train", args, port)
                rounds.add_steps(variant, reports[1]["times"])
                rounds.add(variant, "sent", reports[1]["sent"])
                rounds.add(variant, "loss", reports[0]["loss"])
                sums = [r["weights_abs_sum"] for r in reports]
                if abs(sums[0] - sums[1]) > 1e-3 * sums[0]:
                    raise SystemExit("{}: the ranks' weights differ after training: {}".format(variant, sums))
    compute = rounds.median("compute")
    print("2 worker ranks, one per namespace, veth tbf {} each way; Gluon MLP 14.6 M parameters, batch {} per "
          "rank; {} rounds x {} steps after {} warm-up; {} thread(s) per rank".format(
              args.rate, args.batch, args.rounds, args.steps, args.warmup, args.threads))
    print(rounds.load_words())
    print("compute alone (both ranks, no communication): {:.3f} s/step (rounds {})".format(
        compute, rounds.spread("compute")))
    print("step times and bytes are rank 1's (namespace b: every byte it exchanges crosses the link)")
    base = "dist_sync" if "dist_sync" in names else names[0]
    rows = print_table(rounds, names, compute, base)
    if "dist_sync" in rows:
        for v, target in (("perseus", 1.6), ("perseus_dtype1", 1.0)):
            if v in rows:
                print("{} vs MXNet dist_sync: {:.2f}x (target >= {}x)".format(
                    v, rows["dist_sync"]["step_s"] / rows[v]["step_s"], target))
    if args.json:
        print(json.dumps({"rows": rows, "compute_s": compute, "load": rounds.load}, indent=1))


if __name__ == "__main__":
    main()
