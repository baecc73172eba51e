"""One rank of a 2-rank perseus.tensorflow.horovod job (run by perseusrun): python tf_horovod_cases.py CASE.
Prints one `REPORT {json}` line with what each check saw (results, exception types, seconds to fail).

  disagree: collectives the ranks disagree on: shapes with equal element counts ([17, 1311] vs [17, 23, 57]),
            a dtype outside Horovod's set on one rank (refused before the engine), a scalar allgather on one
            rank (refused by the op kernel), a root rank out of range on one rank (refused by the engine);
            after each, an allreduce that both ranks agree on still works;
  api:      Horovod 0.28's API surface: dtype sets, Min/Max/Product, integer Average, alltoall, reducescatter,
            broadcast_, *_op, grouped collectives, object collectives, capability queries, process_set= of a set never registered;
  grads:    gradients through allreduce (Sum, Average), allgather (uneven rows) and broadcast;
  keras:    Horovod's Keras module functions (hvd.keras and perseus.tensorflow.keras): init/size/rank, the
            value collectives, load_model of a model saved with a distributed optimizer (it stays
            distributed, its state kept), fit with the callbacks incl. LearningRateScheduleCallback and
            BestModelCheckpoint, on the Keras tf.keras is (Keras 3, or tf_keras with TF_USE_LEGACY_KERAS=1).
"""
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402


def outcome(fn):
    """(exception class name or "ok", seconds, result as list or None)."""
    start = time.monotonic()
    try:
        result = fn()
        value = result.numpy().tolist() if hasattr(result, "numpy") else result
        return {"error": "ok", "seconds": time.monotonic() - start, "result": value}
    except Exception as error:  # the type is what is checked
        return {"error": type(error).__name__, "seconds": time.monotonic() - start, "message": str(error)[:400]}


def agreed(tag):
    return hvd.allreduce(tf.constant([1.0, 2.0]), op=hvd.Sum, name="agreed." + tag).numpy().tolist()


def case_disagree(rank, size):
    report = {}
    shape = [17, 1311] if rank == 0 else [17, 23, 57]
    report["shape"] = outcome(lambda: hvd.allreduce(tf.ones(shape), op=hvd.Sum, name="shapes"))
    report["after_shape"] = agreed("shape")
    bad = tf.constant([1.0, 2.0]) if rank == 0 else tf.constant([True, False])
    report["dtype"] = outcome(lambda: hvd.allreduce(bad, op=hvd.Sum, name="dtypes"))
    report["after_dtype"] = agreed("dtype")
    scalar = tf.constant([1, 2]) if rank == 0 else tf.constant(3)
    report["scalar_gather"] = outcome(lambda: hvd.allgather(scalar, name="scalar"))
    report["after_scalar"] = agreed("scalar")
    op = hvd.Sum if rank == 0 else hvd.Adasum
    report["op"] = outcome(lambda: hvd.allreduce(tf.constant([1.0]), op=op, name="ops"))
    report["after_op"] = agreed("op")
    root = 0 if rank == 0 else 7
    report["root"] = outcome(lambda: hvd.broadcast(tf.constant([1.0]), root_rank=root, name="root"))
    report["after_root"] = agreed("root")
    return report


def case_api(rank, size):
    report = {}
    x = tf.constant([[1, 5], [7, 2]]) + rank  # rank 0: [[1,5],[7,2]], rank 1: [[2,6],[8,3]]
    report["min"] = hvd.allreduce(x, op=hvd.Min).numpy().tolist()
    report["max"] = hvd.allreduce(x, op=hvd.Max).numpy().tolist()
    report["product"] = hvd.allreduce(tf.constant([2.0, 3.0]) + rank, op=hvd.Product).numpy().tolist()
    report["int_average"] = hvd.allreduce(tf.constant([3, 10]) + rank, op=hvd.Average).numpy().tolist()
    report["int_prescale"] = hvd.allreduce(tf.constant([3, 10]), op=hvd.Sum, prescale_factor=0.5).numpy().tolist()
    report["int8_sum"] = hvd.allreduce(tf.constant([100, -3], tf.int8), op=hvd.Sum).numpy().tolist()
    report["allreduce_dtypes"] = {
        d.name: outcome(lambda d=d: hvd.allreduce(tf.ones([3], d), op=hvd.Sum))["error"]
        for d in (tf.uint8, tf.int8, tf.int32, tf.int64, tf.float16, tf.float32, tf.float64, tf.bfloat16,
                  tf.uint16, tf.int16, tf.bool)}
    report["move_dtypes"] = {}
    for d in (tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16, tf.float32, tf.float64,
              tf.bool):
        mine = tf.cast(tf.fill([rank + 1, 2], rank + 1), d)
        gathered = hvd.allgather(mine).numpy().astype(np.float64).tolist()
        sent = tf.cast(tf.constant([[3, 4], [5, 6]]) * (rank + 1), d)
        broadcast = hvd.broadcast(sent, root_rank=1).numpy().astype(np.float64).tolist()
        report["move_dtypes"][d.name] = {"gather": gathered, "broadcast": broadcast}
    rows = tf.reshape(tf.range(6) + 10 * rank, [3, 2])
    splits = [1, 2] if rank == 0 else [2, 1]
    out, received = hvd.alltoall(rows, splits=splits)
    report["alltoall"] = {"out": out.numpy().tolist(), "received": received.numpy().tolist()}
    report["alltoall_equal"] = hvd.alltoall(tf.constant([1, 2]) + 10 * rank).numpy().tolist()
    report["reducescatter"] = hvd.reducescatter(tf.reshape(tf.range(6.0), [3, 2]), op=hvd.Sum).numpy().tolist()
    var = tf.Variable([1.0 + rank, 2.0])
    report["broadcast_"] = [v.numpy().tolist() for v in hvd.broadcast_([var], root_rank=1)]
    report["var_after"] = var.numpy().tolist()
    report["ops"] = [int(hvd.rank_op()), int(hvd.size_op()), int(hvd.local_rank_op()), int(hvd.local_size_op())]
    report["grouped_allgather"] = [t.numpy().tolist() for t in hvd.grouped_allgather([tf.constant([rank]),
                                                                                     tf.constant([[rank, rank]])])]
    report["allgather_object"] = hvd.allgather_object({"rank": rank})
    report["broadcast_object"] = hvd.broadcast_object({"from": rank}, root_rank=1)
    report["built"] = {"ccl": hvd.ccl_built(), "nccl": hvd.nccl_built(), "gloo": hvd.gloo_built(),
                       "mpi": hvd.mpi_built(), "cuda": hvd.cuda_built()}
    other = hvd.ProcessSet([0])
    report["process_set"] = outcome(lambda: hvd.allreduce(tf.ones([2]), process_set=other))
    return report


def case_grads(rank, size):
    report = {}
    x = tf.constant([1.0, 2.0, 3.0])
    for op_name, op in (("sum", hvd.Sum), ("average", hvd.Average)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = hvd.allreduce(x * (rank + 1), op=op)
        report["allreduce_" + op_name] = tape.gradient(y, x).numpy().tolist()
    mine = tf.ones([rank + 1, 2]) * (rank + 1)  # rank 0: 1 row, rank 1: 2 rows
    with tf.GradientTape() as tape:
        tape.watch(mine)
        gathered = hvd.allgather(mine)
        loss = tf.reduce_sum(gathered * tf.reshape(tf.range(6.0), [3, 2]) * (rank + 1))
    report["allgather"] = tape.gradient(loss, mine).numpy().tolist()
    b = tf.constant([1.0, 1.0]) * (rank + 1)
    with tf.GradientTape() as tape:
        tape.watch(b)
        loss = tf.reduce_sum(hvd.broadcast(b, root_rank=1) * (rank + 1))
    report["broadcast"] = tape.gradient(loss, b).numpy().tolist()

    @tf.function
    def graph_grad(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = hvd.allreduce(v, op=hvd.Sum)
        return tape.gradient(y, v)

    report["allreduce_tf_function"] = graph_grad(tf.constant([1.0, 1.0])).numpy().tolist()
    return report


def case_keras(rank, size):
    import tempfile

    import perseus.tensorflow.horovod.keras as hk
    import perseus.tensorflow.keras as standalone

    keras = tf.keras
    package = sys.modules[type(keras.layers.Dense(1)).__module__.split(".")[0]]  # keras or tf_keras
    report = {"keras_major": int(package.__version__.split(".")[0]), "keras_package": package.__name__}
    report["standalone_same"] = standalone.DistributedOptimizer is hk.DistributedOptimizer
    hk.init()
    report["who"] = [hk.rank(), hk.size(), hk.local_rank(), hk.local_size(), hk.cross_size(), hk.is_initialized()]
    report["allreduce"] = hk.allreduce(np.array([1.0 + rank, 3.0]), average=True).tolist()
    report["allreduce_sum"] = hk.allreduce(np.array([1.0 + rank]), op=hk.Sum).tolist()
    report["allgather"] = hk.allgather(np.array([[rank]])).tolist()
    report["broadcast"] = hk.broadcast(np.array([5.0 * (rank + 1)]), root_rank=1).tolist()
    report["bgv"] = outcome(lambda: hk.broadcast_global_variables(0))["error"]

    x = np.random.default_rng(rank).normal(size=(64, 4)).astype(np.float32)
    y = (x.sum(axis=1, keepdims=True) * 0.5).astype(np.float32)
    keras.utils.set_random_seed(rank)
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])
    model.compile(loss="mse", optimizer=hk.DistributedOptimizer(keras.optimizers.SGD(0.05, momentum=0.5)))
    seen = []

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(float(np.asarray(self.model.optimizer.learning_rate)))

    folder = tempfile.mkdtemp()
    best = os.path.join(folder, "best.keras" if report["keras_major"] >= 3 else "best.h5")
    callbacks = [hk.callbacks.BroadcastGlobalVariablesCallback(0), hk.callbacks.MetricAverageCallback(),
                 hk.callbacks.LearningRateScheduleCallback(initial_lr=0.05, multiplier=0.5, start_epoch=1, end_epoch=3),
                 Record()]
    if rank == 0:
        callbacks.append(hk.callbacks.BestModelCheckpoint(monitor="loss", filepath=best))
    history = model.fit(x, y, batch_size=16, epochs=4, callbacks=callbacks, verbose=0)
    report["lrs"] = seen
    report["losses"] = [float(v) for v in history.history["loss"]]
    report["weights"] = [w.tolist() for w in model.get_weights()]
    report["best_saved"] = os.path.exists(best) if rank == 0 else None
    path = os.path.join(folder, "model.keras" if report["keras_major"] >= 3 else "model.h5")
    model.save(path)
    loaded = hk.load_model(path)
    report["loaded_distributed"] = bool(getattr(type(loaded.optimizer), "_perseus_distributed", False))
    report["loaded_class"] = type(loaded.optimizer).__name__
    report["loaded_iterations"] = int(np.asarray(loaded.optimizer.iterations))
    loaded.fit(x, y, batch_size=16, epochs=1, verbose=0)
    report["loaded_weights"] = [w.tolist() for w in loaded.get_weights()]

    keras.utils.set_random_seed(7)  # the same initial weights on both ranks
    shared, local = keras.layers.Dense(3), keras.layers.Dense(1)
    partial = keras.Sequential([keras.Input(shape=(4,)), shared, local])
    partial.compile(loss="mse", optimizer=standalone.PartialDistributedOptimizer(keras.optimizers.SGD(0.1),
                                                                                 local_layers=[local]))
    partial.fit(x, y, batch_size=64, epochs=1, verbose=0)
    report["partial_shared"] = [w.tolist() for w in shared.get_weights()]
    report["partial_local"] = [w.tolist() for w in local.get_weights()]
    return report


def main():
    case = sys.argv[1]
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    report = {"case_disagree": case_disagree, "case_api": case_api, "case_grads": case_grads,
              "case_keras": case_keras}["case_" + case](rank, size)
    report["rank"] = rank
    print("REPORT " + json.dumps(report), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
