"""One rank of a 4-rank perseus.tensorflow.horovod job (run by perseusrun): python tf_process_sets.py sets.

Process sets {0,1} (made at init), {2,3} and {0,2}: every collective of the API on each set this rank belongs
to, for every dtype the collective offers, reported as lists (tests/tensorflow/test_tf_process_sets.py compares
them with numpy). Rank 0 sleeps 5 s before its first collective on {0,1}: the one on {2,3} must not wait for
it. Then the refusals (a rank outside a set, a set never registered, a removed set) and dynamic removal.
Prints one `REPORT {json}` line.
"""
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402

REDUCE_DTYPES = ["uint8", "int8", "int32", "int64", "float16", "float32", "float64"]
MOVE_DTYPES = REDUCE_DTYPES + ["uint16", "int16", "bool"]
OPS = {"sum": hvd.Sum, "average": hvd.Average, "min": hvd.Min, "max": hvd.Max, "product": hvd.Product}


def value(rank: int, dtype: str) -> np.ndarray:
    """This rank's tensor (the test builds the same): small integers, floats fp16 cannot all hold."""
    base = (np.arange(6).reshape(2, 3) % 4) + rank + 1
    if dtype == "bool":
        return (base % 2).astype(bool)
    if dtype.startswith("float"):
        return (base * 1.0001).astype(dtype)
    return base.astype(dtype)


def as_list(tensor) -> list:
    return np.asarray(tensor.numpy()).tolist()


def on_set(ps, rank: int, tag: str) -> dict:
    out = {}
    for dtype in REDUCE_DTYPES:
        mine = tf.constant(value(rank, dtype))
        for op_name, op in OPS.items():
            out["allreduce:%s:%s" % (op_name, dtype)] = as_list(hvd.allreduce(mine, op=op, process_set=ps))
        for op_name in ("sum", "average"):
            out["reducescatter:%s:%s" % (op_name, dtype)] = as_list(
                hvd.reducescatter(mine, op=OPS[op_name], process_set=ps))
    root = ps.ranks[-1]
    for dtype in MOVE_DTYPES:
        mine = tf.constant(value(rank, dtype))
        out["allgather:" + dtype] = as_list(hvd.allgather(mine[:ps.rank() + 1], process_set=ps))
        out["broadcast:" + dtype] = as_list(hvd.broadcast(mine, root_rank=root, process_set=ps))
        out["alltoall:" + dtype] = as_list(hvd.alltoall(mine, splits=[1, 1], process_set=ps)[0])
    floats = tf.constant(value(rank, "float32"))
    out["grouped_allreduce"] = [as_list(t) for t in hvd.grouped_allreduce([floats, floats * 2.0], op=hvd.Sum,
                                                                          process_set=ps)]
    out["grouped_allgather"] = [as_list(t) for t in hvd.grouped_allgather([floats, floats[:1]], process_set=ps)]
    out["grouped_reducescatter"] = [as_list(t) for t in hvd.grouped_reducescatter([floats, floats * 3.0],
                                                                                  op=hvd.Sum, process_set=ps)]
    out["in_function"] = as_list(tf.function(lambda t: hvd.allreduce(t, op=hvd.Sum, process_set=ps,
                                                                     name="fn." + tag))(floats))
    out["broadcast_object"] = hvd.broadcast_object({"from": rank}, root_rank=root, process_set=ps)
    out["allgather_object"] = hvd.allgather_object({"rank": rank}, process_set=ps)
    x = tf.Variable(tf.ones([3]))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(hvd.allreduce(x * (rank + 1.0), op=hvd.Sum, process_set=ps))
    out["allreduce_grad"] = as_list(tape.gradient(y, x))  # the set's size x (rank + 1)
    out["size_op"] = int(hvd.size_op(process_set_id=ps.process_set_id).numpy())
    out["included_op"] = int(hvd.process_set_included_op(process_set_id=ps.process_set_id).numpy())
    return out


def main() -> int:
    low = hvd.ProcessSet([0, 1])
    hvd.init(process_sets=[low])
    rank, size = hvd.rank(), hvd.size()
    high = hvd.add_process_set([2, 3])
    even = hvd.add_process_set(hvd.ProcessSet([0, 2]))
    mine = low if rank < 2 else high
    report = {"rank": rank, "size": size, "ids": [low.process_set_id, high.process_set_id, even.process_set_id],
              "set_rank": mine.rank(), "set_size": mine.size(), "in_even": even.included()}
    if rank == 0:
        time.sleep(5.0)
    started = time.time()
    report["first_sum"] = as_list(hvd.allreduce(tf.constant([float(rank)]), op=hvd.Sum, process_set=mine))
    report["first_seconds"] = time.time() - started
    report["first_finished_at"] = time.time()
    report["mine"] = on_set(mine, rank, "mine")
    if even.included():
        report["even"] = on_set(even, rank, "even")
    # the gradient paths on a set: members average over it, the others keep their own gradient
    x = tf.Variable(float(rank))
    with tf.GradientTape() as tape:
        loss = x * x
    report["tape_grad"] = float(hvd.DistributedGradientTape(tape, process_set=even).gradient(loss, [x])[0])
    outsider = high if rank < 2 else low
    for key, call in (("outsider", lambda: hvd.allreduce(tf.ones([4]), process_set=outsider)),
                      ("outsider_gather", lambda: hvd.allgather(tf.ones([1]), process_set=outsider)),
                      ("unregistered", lambda: hvd.allreduce(tf.ones([4]), process_set=hvd.ProcessSet([0, 3])))):
        try:
            call()
            report[key] = "accepted"
        except Exception as error:  # the type and message are what is checked
            report[key] = "%s: %s" % (type(error).__name__, error)
    report["job_sum"] = as_list(hvd.allreduce(tf.constant([1.0]), op=hvd.Sum))
    removed_even = hvd.remove_process_set(even)
    try:
        hvd.allreduce(tf.ones([1]), process_set=even)
        report["after_remove"] = "accepted"
    except ValueError as error:
        report["after_remove"] = "ValueError: %s" % error
    odd = hvd.add_process_set([1, 3])  # dynamic: added after a removal
    if odd.included():
        report["odd_sum"] = as_list(hvd.allreduce(tf.constant([float(rank)]), op=hvd.Sum, process_set=odd))
    report["odd_id"] = odd.process_set_id
    report["removed"] = [removed_even, hvd.remove_process_set(odd), hvd.remove_process_set(high),
                         hvd.remove_process_set(low), hvd.remove_process_set(low),
                         hvd.remove_process_set(hvd.global_process_set)]
    report["job_sum_after"] = as_list(hvd.allreduce(tf.constant([2.0]), op=hvd.Sum))
    print("REPORT " + json.dumps(report), flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
