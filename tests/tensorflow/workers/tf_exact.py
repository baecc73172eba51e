"""One rank of a 2-rank perseus.tensorflow.horovod job (run by perseusrun): python tf_exact.py exact.

Prints one `REPORT {json}` line. Under the engine's default wire policy (PERSEUS_ALLREDUCE_DTYPE unset: fp32
gradients travel as fp16), it reports
  - what the public collectives returned for values fp16 cannot hold (1.0001, 70000.0, ...): hvd.allreduce
    (Sum, Average), grouped_allreduce, reducescatter of float32, allreduce of float64, and the float16 bytes
    the engine put on the wire meanwhile;
  - one DistributedGradientTape step and one hvd.keras.DistributedOptimizer step (Compression.none): the
    averaged gradient / the updated weight, and the float16 bytes they put on the wire (the gradient paths
    keep the wire policy);
  - gradient_predivide_factor: a tape and a Keras optimizer step with factor 2 on gradients of 5000 (x the
    gradient scale 10, the sum of two ranks exceeds fp16's range unless divided first), and the ValueError
    for op=Sum.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402

# values fp16 cannot represent (and 70000 is beyond fp16's range), per rank
VALUES = {0: [1.0001, 70000.0, 3.1415927, 1e-8, -2.5e-5, 0.1],
          1: [2.0003, 0.1, 65519.0, 1e-7, 123456.78, 1.0001]}
DOUBLES = {0: [1.0000000001, 70000.000000001], 1: [2.0000000003, 1e-12]}
# gradients inside fp16's range once the engine's gradient scale (10) is applied, not representable in fp16
GRADS = {0: [1.0001, 0.3, 2.7182817, -0.0123], 1: [2.0003, 0.1, 3.1415927, 0.0456]}


def fp16_bytes() -> int:
    return hvd.engine_wire_bytes("float16")[0]


def public_collectives(rank: int) -> dict:
    mine = tf.constant(VALUES[rank], tf.float32)
    before = fp16_bytes()
    report = {
        "sum": hvd.allreduce(mine, op=hvd.Sum).numpy().tolist(),
        "average": hvd.allreduce(mine).numpy().tolist(),  # Horovod's default op: Average
        "grouped": [t.numpy().tolist() for t in hvd.grouped_allreduce([mine, mine * 3.0], op=hvd.Sum)],
        "reducescatter": hvd.reducescatter(tf.reshape(mine, [2, 3]), op=hvd.Sum).numpy().tolist(),
        "double_sum": hvd.allreduce(tf.constant(DOUBLES[rank], tf.float64), op=hvd.Sum).numpy().tolist(),
        "tf_function_sum": tf.function(lambda t: hvd.allreduce(t, op=hvd.Sum, name="in_function"))(mine)
                             .numpy().tolist(),
    }
    report["public_fp16_bytes"] = fp16_bytes() - before
    return report


def reducescatter_grads(rank: int) -> dict:
    """Horovod's reducescatter gradient: every rank's output gradient gathered, times the size for Sum and the
    scale factors. Each rank's output gradient is (rank + 1) everywhere, so the ranks' parts are told apart."""
    v = tf.Variable(tf.reshape(tf.range(8, dtype=tf.float32), [4, 2]))
    dy = tf.fill([2, 2], float(rank + 1))
    grads = {}
    for label, kwargs in (("sum", {"op": hvd.Sum}), ("average", {"op": hvd.Average}),
                          ("sum_postscale", {"op": hvd.Sum, "postscale_factor": 0.25})):
        with tf.GradientTape() as tape:
            out = hvd.reducescatter(v, **kwargs)
        grads[label] = tape.gradient(out, v, output_gradients=dy).numpy().tolist()
    return {"reducescatter_grads": grads}


def tape_step(rank: int) -> dict:
    """d(sum(w * c))/dw = c: the tape's averaged gradient is the average of the ranks' c."""
    w = tf.Variable(tf.zeros([len(GRADS[0])]))
    c = tf.constant(GRADS[rank], tf.float32)
    before = fp16_bytes()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * c)
    grad = hvd.DistributedGradientTape(tape).gradient(loss, [w])[0]
    return {"tape_grad": grad.numpy().tolist(), "tape_fp16_bytes": fp16_bytes() - before}


def keras_step(rank: int) -> dict:
    """SGD(learning_rate=1) from 0 with the gradient c: the weight becomes -average(c)."""
    w = tf.Variable(tf.zeros([len(GRADS[0])]))
    opt = hvd.keras.DistributedOptimizer(tf.keras.optimizers.SGD(learning_rate=1.0))
    before = fp16_bytes()
    opt.apply_gradients([(tf.constant(GRADS[rank], tf.float32), w)])
    return {"keras_weight": w.numpy().tolist(), "keras_fp16_bytes": fp16_bytes() - before}


def predivide(rank: int) -> dict:
    big = [5000.0, 1.5]
    w = tf.Variable(tf.zeros([2]))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * tf.constant(big))
    grad = hvd.DistributedGradientTape(tape, gradient_predivide_factor=2.0).gradient(loss, [w])[0]
    v = tf.Variable(tf.zeros([2]))
    opt = hvd.keras.DistributedOptimizer(tf.keras.optimizers.SGD(learning_rate=1.0), gradient_predivide_factor=2.0)
    opt.apply_gradients([(tf.constant(big), v)])
    refused = []
    for make in (lambda: hvd.DistributedGradientTape(tf.GradientTape(), op=hvd.Sum, gradient_predivide_factor=2.0),
                 lambda: hvd.DistributedOptimizer(tf.keras.optimizers.SGD(), op=hvd.Sum, gradient_predivide_factor=2.0)):
        try:
            make()
            refused.append("accepted")
        except ValueError as error:
            refused.append(str(error))
    return {"predivide_grad": grad.numpy().tolist(), "predivide_weight": v.numpy().tolist(),
            "predivide_refused": refused}


def main() -> int:
    hvd.init()
    rank = hvd.rank()
    report = {"rank": rank, "size": hvd.size(), "fp16_policy": bool(hvd.engine_info()["intra_fp16"])}
    report.update(public_collectives(rank))
    report.update(reducescatter_grads(rank))
    report.update(tape_step(rank))
    report.update(keras_step(rank))
    report.update(predivide(rank))
    print("REPORT " + json.dumps(report), flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
