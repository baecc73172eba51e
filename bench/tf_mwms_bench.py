"""Keras training over a 1 Gbit/s link: perseus (hvd.keras) vs TensorFlow's MultiWorkerMirroredStrategy (RING).

2 ranks, one per namespace of the shared netns harness (bench/netns.py), each on its own synthetic data
(ddp_bench.py's teacher labelling), a Keras 3 MLP of 14.6 M parameters (ddp_bench's 1024-4096-2048-1000),
keras.optimizers.SGD with momentum, the same training step for every variant (tf.function: forward, loss,
tape.gradient, optimizer.apply), as TensorFlow's custom-training-loop tutorials write it. Not model.fit:
Keras 3's fit fails under a multi-worker MultiWorkerMirroredStrategy (its symbolic build reduces a
PerReplica batch eagerly: keras-team/keras#20585, tensorflow/tensorflow#72388), the custom loop is what
TensorFlow's multi-worker tutorial offers instead.

  perseus          import perseus.tensorflow.horovod as hvd; hvd.init(); hvd.keras.DistributedOptimizer(SGD),
                   hvd.broadcast_variables once; default PERSEUS_* (fp16 on the wire)
  mwms_ring        tf.distribute.MultiWorkerMirroredStrategy(communication_options=
                   CommunicationOptions(implementation=RING)), TF_CONFIG naming the two workers' addresses,
                   model and optimizer created in strategy.scope(), the step in strategy.run, the same global
                   batch (per-worker input pipelines through distribute_datasets_from_function)
  perseus_dtype1   perseus with PERSEUS_ALLREDUCE_DTYPE=1 (fp32 on the wire)

Per variant and round, its wire time alone is measured too (its reduction of one fp32 tensor of all the
gradients' elements, nothing else running: hvd.allreduce, or the strategy's all_reduce in strategy.run),
and once per round the compute alone (both ranks training locally at once, no communication). A variant's
floor = compute + its wire alone. Loss: after training, on a fixed evaluation batch (the same for every
variant). Needs root.

    sudo .venv/bin/python bench/tf_mwms_bench.py [--steps 15] [--warmup 5] [--rounds 3] [--batch 32]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fw_pair import CLASSES, FEATURES, Link, Rounds, batches, print_table, report, run_pair, tx_bytes  # noqa: E402
from netns import ADDRESSES, missing_requirement  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"perseus": {}, "mwms_ring": {}, "perseus_dtype1": {"PERSEUS_ALLREDUCE_DTYPE": "1"}}


# ---- a rank -------------------------------------------------------------------------------------

def build_model():
    import keras

    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(4096, activation="relu"),
                             keras.layers.Dense(2048, activation="relu"), keras.layers.Dense(CLASSES)])


def loop(step, batches_xy, warmup: int) -> List[float]:
    """Calls step(x, y) per batch; returns the measured steps' seconds (each call returns when done)."""
    times = []
    for index, (x, y) in enumerate(batches_xy):
        start = time.perf_counter()
        float(step(x, y))
        if index >= warmup:
            times.append(time.perf_counter() - start)
    return times


def step_function(model, optimizer, scale: float):
    """One training step as TensorFlow's custom-loop tutorials write it: loss over the batch (scaled by
    `scale`), gradients, optimizer.apply."""
    import keras
    import tensorflow as tf

    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(per_example(y, model(x, training=True))) * scale
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    return step


def evaluate(model, eval_x, eval_y) -> Dict[str, float]:
    import numpy as np
    import keras

    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(eval_y, model(eval_x, training=False))
    weights = float(sum(np.abs(np.asarray(w)).sum() for w in model.get_weights()))
    return {"loss": float(loss), "weights_abs_sum": weights}


def sgd():
    import keras

    return keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)


def perseus_rank(args: argparse.Namespace, rank: int, xs, ys, eval_x, eval_y) -> Dict[str, object]:
    import tensorflow as tf
    import perseus.tensorflow.horovod as hvd

    hvd.init()
    model = build_model()
    if args.phase == "wire":
        grads, times = [tf.ones(v.shape) for v in model.trainable_variables], []
        # the gradient path the DistributedOptimizer / DistributedGradientTape take (the engine's wire policy)
        from perseus.tensorflow.horovod.collectives import gradient_allreduce
        reduce_all = tf.function(lambda: [gradient_allreduce(g, hvd.Compression.none, hvd.Average, "wire.%d" % i)
                                          for i, g in enumerate(grads)])
        for step in range(args.warmup + args.steps):
            hvd.allreduce(tf.zeros([1]), op=hvd.Sum, name="barrier.%d" % step)
            start, sent = time.perf_counter(), tx_bytes()
            [g.numpy() for g in reduce_all()]
            if step >= args.warmup:
                times.append(time.perf_counter() - start)
        found = {"times": times, "sent": tx_bytes() - sent}
    else:
        optimizer = hvd.keras.DistributedOptimizer(sgd())
        optimizer.build(model.trainable_variables)
        hvd.broadcast_variables(model.variables + optimizer.variables, root_rank=0)
        step = tf.function(step_function(model, optimizer, 1.0 / args.batch))  # this rank's mean; hvd averages
        before = tx_bytes()
        times = loop(step, ((tf.constant(x), tf.constant(y)) for x, y in zip(xs, ys)), args.warmup)
        found = dict(evaluate(model, eval_x, eval_y), times=times, sent=(tx_bytes() - before) / len(xs))
    found["engine"] = {k: v for k, v in hvd.engine_info().items() if k in ("wire_dtype", "policy", "fused_groups")}
    hvd.shutdown()
    return found


def mwms_rank(args: argparse.Namespace, rank: int, xs, ys, eval_x, eval_y) -> Dict[str, object]:
    import tensorflow as tf

    # what a TF user writes: the cluster in TF_CONFIG (set by the runner), RING collectives
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    with strategy.scope():
        model = build_model()
        optimizer = sgd()
    if args.phase == "wire":
        grads = [tf.ones(v.shape) for v in model.trainable_variables]

        @tf.function
        def reduce_all():  # what its optimizer does with the gradients: one all_reduce of the list
            return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", grads))

        @tf.function
        def barrier():
            return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", tf.zeros([1])))

        times = []
        for step in range(args.warmup + args.steps):
            barrier()
            start, sent = time.perf_counter(), tx_bytes()
            [strategy.experimental_local_results(g)[0].numpy() for g in reduce_all()]
            if step >= args.warmup:
                times.append(time.perf_counter() - start)
        return {"times": times, "sent": tx_bytes() - sent}

    def per_worker(context: tf.distribute.InputContext) -> tf.data.Dataset:
        # this worker's own batches, as perseus' ranks get theirs; global batch = batch x workers
        assert context.input_pipeline_id == rank
        return tf.data.Dataset.from_tensor_slices((xs, ys)).unbatch().batch(
            context.get_per_replica_batch_size(args.batch * 2))

    # the tutorial's loss: summed over the replica's batch, divided by the GLOBAL batch; the optimizer sums
    # the gradients over the replicas (Keras 3's optimizer under the strategy)
    replica_step = step_function(model, optimizer, 1.0 / (args.batch * 2))

    @tf.function
    def step(x, y):
        return strategy.experimental_local_results(strategy.run(replica_step, args=(x, y)))[0]

    iterator = iter(strategy.distribute_datasets_from_function(per_worker))
    before = tx_bytes()
    times = loop(step, (next(iterator) for _ in range(len(xs))), args.warmup)
    return dict(evaluate(model, eval_x, eval_y), times=times, sent=(tx_bytes() - before) / len(xs))


def compute_rank(args: argparse.Namespace, rank: int, xs, ys, eval_x, eval_y) -> Dict[str, object]:
    import tensorflow as tf

    model = build_model()
    step = tf.function(step_function(model, sgd(), 1.0 / args.batch))
    return {"times": loop(step, ((tf.constant(x), tf.constant(y)) for x, y in zip(xs, ys)), args.warmup)}


def worker(args: argparse.Namespace) -> None:
    import keras
    import tensorflow as tf

    keras.config.disable_traceback_filtering()

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    rank = int(os.environ["RANK"])
    data = batches(rank, args.warmup + args.steps, args.batch)
    run = {"compute": compute_rank, "mwms_ring": mwms_rank}.get(args.worker, perseus_rank)
    found = run(args, rank, *data)
    found.update(rank=rank, variant=args.worker, phase=args.phase)
    report(found)


# ---- the runner ---------------------------------------------------------------------------------

def run(link: Link, variant: str, phase: str, args: argparse.Namespace, port: int) -> List[Dict[str, object]]:
    env = dict(os.environ)
    env.update(VARIANTS.get(variant, {}))
    env.update({"WORLD_SIZE": "2", "MASTER_ADDR": ADDRESSES[0], "PERSEUS_MASTER_PORT": str(port),
                "LOCAL_WORLD_SIZE": "1", "LOCAL_RANK": "0", "OMP_NUM_THREADS": str(args.threads),
                "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "",
                "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "native" / "runtime"), env.get("PYTHONPATH", "")])})
    workers = ["{}:{}".format(ADDRESSES[0], port + 1), "{}:{}".format(ADDRESSES[1], port + 2)]
    envs = []
    for rank in range(2):
        rank_env = dict(env, RANK=str(rank), GROUP_RANK=str(rank))
        if variant == "mwms_ring":
            rank_env["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker",
                                                                                         "index": rank}})
        envs.append(rank_env)
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", variant, "--phase", phase, "--steps",
            str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch), "--threads", str(args.threads)]
    return run_pair(link, [argv, argv], envs, args.timeout, "{} ({})".format(variant, phase))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=15, help="measured steps per variant and round")
    parser.add_argument("--warmup", type=int, default=5, help="steps before measuring")
    parser.add_argument("--batch", type=int, default=32, help="batch per rank (global batch: 2x)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every variant, interleaved")
    parser.add_argument("--threads", type=int, default=1, help="TensorFlow intra- and inter-op threads per rank")
    parser.add_argument("--rate", default="1gbit", help="tbf rate of each side of the link")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
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
        raise SystemExit("tf_mwms_bench " + problem)
    names = args.only or list(VARIANTS)
    rounds, port = Rounds(), 30100
    with Link(args.rate) as link:
        for index in range(args.rounds):
            rounds.note_load()
            port += 10
            rounds.add_steps("compute", run(link, "compute", "train", args, port)[0]["times"])
            for variant in names[index % len(names):] + names[:index % len(names)]:
                rounds.note_load()
                port += 10
                wire = run(link, variant, "wire", args, port)[0]
                rounds.add(variant, "wire_s", sorted(wire["times"])[len(wire["times"]) // 2])
                rounds.add(variant, "wire_sent", wire["sent"])
                port += 10
                reports = run(link, variant, "train", args, port)
                rounds.add_steps(variant, reports[0]["times"])
                rounds.add(variant, "sent", reports[0]["sent"])
                rounds.add(variant, "loss", reports[0]["loss"])
                if abs(reports[0]["weights_abs_sum"] - reports[1]["weights_abs_sum"]) > 1e-3 * reports[0]["weights_abs_sum"]:
                    raise SystemExit("{}: the ranks' weights differ after training: {}".format(variant, reports))
    compute = rounds.median("compute")
    print("2 ranks, one per namespace, veth tbf {} each way; MLP 14.6 M parameters, batch {} per rank; "
          "{} rounds x {} steps after {} warm-up; {} TF thread(s) per rank".format(
              args.rate, args.batch, args.rounds, args.steps, args.warmup, args.threads))
    print(rounds.load_words())
    print("compute alone (both ranks, no communication): {:.3f} s/step (rounds {})".format(compute,
                                                                                        rounds.spread("compute")))
    base = "mwms_ring" if "mwms_ring" in names else names[0]
    rows = print_table(rounds, names, compute, base)
    if "mwms_ring" in rows:
        for v, target in (("perseus", 1.6), ("perseus_dtype1", 0.95)):
            if v in rows:
                print("{} vs MultiWorkerMirroredStrategy(RING): {:.2f}x (target >= {}x)".format(
                    v, rows["mwms_ring"]["step_s"] / rows[v]["step_s"], target))
    if args.json:
        print(json.dumps({"rows": rows, "compute_s": compute, "load": rounds.load}, indent=1))


if __name__ == "__main__":
    main()
