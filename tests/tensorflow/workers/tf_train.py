"""A perseus.tensorflow.horovod job of N ranks (run by perseusrun): python tf_train.py CASE.

Each rank starts from different random weights and trains on its own shard of one synthetic regression
problem; it prints one `REPORT {json}` line: its rank, the losses per step, a digest of its final
variables, and what the collectives returned.
  tape:  broadcast_variables + a tf.function GradientTape loop with DistributedGradientTape (fp16
         compression), plus eager allreduce sum / average, allgather of uneven rows, broadcast;
  keras: model.fit with hvd.keras.DistributedOptimizer and the three callbacks, on the Keras tf.keras is
         (Keras 3; Keras 2 with TF_USE_LEGACY_KERAS=1 or on TensorFlow <= 2.15), with the bytes the
         engine put on the wire during fit; `keras legacy`: Keras 2's legacy Adam;
  tf1:   eager execution off, a TF1 graph trained by DistributedOptimizer(AdamOptimizer) in a
         MonitoredTrainingSession with BroadcastGlobalVariablesHook(0);
  nancheck: one DistributedGradientTape step whose gradient is inf on rank 1 (the NaN check's variable is
         set by the test): what it raised, or whether the weights stayed finite.
"""
import hashlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402

STEPS = 30


def shard(rank: int, size: int, n: int = 256):
    rng = np.random.default_rng(1234)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    w = rng.normal(size=(8, 1)).astype(np.float32)
    y = (x @ w + 0.5).astype(np.float32)
    return x[rank::size], y[rank::size]


def model_for(rank: int):
    tf.keras.utils.set_random_seed(100 + rank)  # different initial weights on every rank
    return tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(16, activation="tanh"),
                                tf.keras.layers.Dense(1)])


def digest(variables) -> str:
    h = hashlib.sha256()
    for v in variables:
        h.update(np.ascontiguousarray(v.numpy()).tobytes())
    return h.hexdigest()


def collectives_report(rank: int, size: int) -> dict:
    mine = tf.constant([1.0 + rank, 2.0 * rank], tf.float32)
    rows = tf.fill([rank + 1, 2], tf.cast(rank, tf.int32))  # rank r contributes r + 1 rows
    return {
        "sum": hvd.allreduce(mine, op=hvd.Sum).numpy().tolist(),
        "average": hvd.allreduce(mine, op=hvd.Average).numpy().tolist(),
        "fp16": hvd.allreduce(mine, op=hvd.Average, compression=hvd.Compression.fp16).numpy().tolist(),
        "int_sum": hvd.allreduce(tf.constant([rank + 1], tf.int64), op=hvd.Sum).numpy().tolist(),
        "gather": hvd.allgather(rows).numpy().tolist(),
        "broadcast": hvd.broadcast(tf.constant([10.0 * (rank + 1)]), root_rank=1 % size).numpy().tolist(),
        "grouped": [t.numpy().tolist() for t in hvd.grouped_allreduce([mine, 2 * mine], op=hvd.Sum)],
        "sparse": sparse_report(rank),
    }


def sparse_report(rank: int) -> dict:
    """A tf.IndexedSlices gradient is allgathered (values and indices), averaged values divided by size."""
    grad = tf.IndexedSlices(values=tf.constant([[2.0 + 2 * rank, 0.0]]), indices=tf.constant([rank], tf.int64),
                            dense_shape=tf.constant([4, 2], tf.int64))
    out = hvd.allreduce(grad, op=hvd.Average)
    return {"values": out.values.numpy().tolist(), "indices": out.indices.numpy().tolist(),
            "dense_shape": out.dense_shape.numpy().tolist()}


def run_tape(rank: int, size: int) -> dict:
    x, y = shard(rank, size)
    model = model_for(rank)
    opt = tf.keras.optimizers.SGD(learning_rate=0.05)
    before = digest(model.trainable_variables)
    hvd.broadcast_variables(model.trainable_variables, root_rank=0)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
        tape = hvd.DistributedGradientTape(tape, compression=hvd.Compression.fp16)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    losses = [float(step(x, y)) for _ in range(STEPS)]
    return {"losses": losses, "before": before, "after": digest(model.trainable_variables)}


def wire() -> dict:
    return {dtype: hvd.engine_wire_bytes(dtype)[0] for dtype in ("float16", "float32")}


def run_keras(rank: int, size: int, legacy: bool = False) -> dict:
    x, y = shard(rank, size)
    model = model_for(rank)
    adam = tf.keras.optimizers.legacy.Adam if legacy else tf.keras.optimizers.Adam
    opt = hvd.keras.DistributedOptimizer(adam(learning_rate=0.01))
    model.compile(optimizer=opt, loss="mse", **({} if keras_major() < 3 else {"jit_compile": False}))
    callbacks = [hvd.keras.callbacks.BroadcastGlobalVariablesCallback(0), hvd.keras.callbacks.MetricAverageCallback(),
                 hvd.keras.callbacks.LearningRateWarmupCallback(initial_lr=0.01, warmup_epochs=2, steps_per_epoch=4)]
    before = wire()
    history = model.fit(x, y, batch_size=32, epochs=6, shuffle=False, verbose=0, callbacks=callbacks)
    after = wire()
    return {"losses": [float(v) for v in history.history["loss"]], "after": digest(model.variables),
            "optimizer_class": type(model.optimizer).__name__, "optimizer_module": type(model.optimizer).__module__,
            "keras_major": keras_major(), "steps": int(model.optimizer.iterations.numpy()),
            "gradient_elements": int(sum(int(np.prod(v.shape)) for v in model.trainable_variables)),
            "fit_wire": {dtype: after[dtype] - before[dtype] for dtype in after}}


def keras_major() -> int:
    name = getattr(tf.keras, "__name__", "")
    return int(sys.modules[name.split(".")[0]].__version__.split(".")[0])


def run_tf1(rank: int, size: int) -> dict:
    x, y = shard(rank, size)
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        xs, ys = v1.constant(x), v1.constant(y)
        w = v1.get_variable("w", shape=[8, 1], initializer=v1.random_normal_initializer(seed=100 + rank))
        b = v1.get_variable("b", shape=[1], initializer=v1.zeros_initializer())
        loss = v1.reduce_mean(v1.square(v1.matmul(xs, w) + b - ys))
        opt = hvd.DistributedOptimizer(v1.train.AdamOptimizer(0.05))
        train = opt.minimize(loss)
        with v1.Session(graph=graph) as plain:  # the weights each rank starts from
            plain.run(v1.global_variables_initializer())
            before = digest_values(plain.run([w, b]))
        losses = []
        with v1.train.MonitoredTrainingSession(hooks=[hvd.BroadcastGlobalVariablesHook(0)]) as sess:
            for _ in range(STEPS):
                losses.append(float(sess.run([train, loss])[1]))
            after = digest_values(sess.run([w, b] + opt.variables()))
    return {"losses": losses, "before": before, "after": after}


def digest_values(values) -> str:
    h = hashlib.sha256()
    for v in values:
        h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()


def run_nancheck(rank: int, size: int) -> dict:
    x, y = shard(rank, size)
    model = model_for(0)
    opt = tf.keras.optimizers.SGD(learning_rate=0.05)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y)) * (float("inf") if rank == 1 else 1.0)
    tape = hvd.DistributedGradientTape(tape)
    try:
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    except Exception as error:  # the engine's NaN-check error, however TensorFlow surfaces it
        return {"raised": type(error).__name__, "message": str(error)}
    return {"raised": None, "finite": bool(all(np.isfinite(v.numpy()).all() for v in model.trainable_variables))}


def main() -> int:
    case = sys.argv[1]
    if case == "tf1":
        tf.compat.v1.disable_eager_execution()
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    report = {"rank": rank, "size": size, "local_rank": hvd.local_rank(), "local_size": hvd.local_size()}
    if case == "tf1":
        report.update(run_tf1(rank, size))
    elif case == "nancheck":
        report.update(run_nancheck(rank, size))
    else:
        report.update(collectives_report(rank, size))
        report.update(run_tape(rank, size) if case == "tape" else run_keras(rank, size, "legacy" in sys.argv[2:]))
    info = hvd.engine_info()
    report["collectives_issued"] = info["collectives"]
    report["fp16_wire"] = bool(info["intra_fp16"])
    print("REPORT " + json.dumps(report), flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
