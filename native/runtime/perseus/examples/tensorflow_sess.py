"""A TF1 graph trained in sessions with perseus (Horovod's tf.Session recipe), on synthetic data:

    perseusrun -np 2 -- python tensorflow_sess.py [--steps 200] [--batch-size 32]

Eager execution is off; the model is built as a graph, the optimizer is `hvd.DistributedOptimizer` around
tf.compat.v1.train.AdamOptimizer (gradients averaged over the ranks, fp16 on the wire unless
PERSEUS_ALLREDUCE_DTYPE=1), and a MonitoredTrainingSession runs it with `hvd.BroadcastGlobalVariablesHook(0)`
(rank 0's initial variables everywhere). With a plain tf.compat.v1.Session, run
`sess.run(hvd.broadcast_global_variables(0))` after the initializer instead (`--plain-session`).
Checkpoints are written by rank 0 only. Every rank prints one `RESULT {json}` line: its rank, first and
last loss, and a digest of its variables (equal on every rank).
"""
import argparse
import hashlib
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402


def synthetic_shard(rank, size, samples=2048, features=16):
    """One regression problem (the same on every rank); each rank keeps every size-th sample."""
    rng = np.random.RandomState(7)
    x = rng.randn(samples, features).astype(np.float32)
    y = (np.tanh(x @ rng.randn(features, 1)) + 0.1 * rng.randn(samples, 1)).astype(np.float32)
    return x[rank::size], y[rank::size]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--plain-session", action="store_true", help="tf.compat.v1.Session + broadcast_global_variables")
    args = parser.parse_args()

    tf.compat.v1.disable_eager_execution()
    hvd.init()
    x_all, y_all = synthetic_shard(hvd.rank(), hvd.size())

    v1 = tf.compat.v1
    v1.set_random_seed(hvd.rank())  # different on purpose: the broadcast makes them equal
    x = v1.placeholder(tf.float32, [None, x_all.shape[1]])
    y = v1.placeholder(tf.float32, [None, 1])

    def dense(inputs, units, name):  # tf.compat.v1.layers is gone with Keras 3: plain graph variables
        w = v1.get_variable(name + "/kernel", [inputs.shape[1], units], initializer=v1.glorot_uniform_initializer())
        b = v1.get_variable(name + "/bias", [units], initializer=v1.zeros_initializer())
        return tf.matmul(inputs, w) + b

    hidden = tf.nn.relu(dense(x, 64, "hidden"))
    prediction = dense(hidden, 1, "output")
    loss = tf.reduce_mean(tf.square(prediction - y))
    global_step = tf.compat.v1.train.get_or_create_global_step()
    opt = hvd.DistributedOptimizer(tf.compat.v1.train.AdamOptimizer(args.lr * hvd.size()))
    train_op = opt.minimize(loss, global_step=global_step)

    rng = np.random.RandomState(hvd.rank())
    losses = []

    def feed():
        idx = rng.randint(0, len(x_all), args.batch_size)
        return {x: x_all[idx], y: y_all[idx]}

    if args.plain_session:
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(hvd.broadcast_global_variables(0))
            for _ in range(args.steps):
                losses.append(float(sess.run([train_op, loss], feed_dict=feed())[1]))
            values = sess.run(tf.compat.v1.global_variables())
    else:
        hooks = [hvd.BroadcastGlobalVariablesHook(0)]
        checkpoint_dir = None  # rank 0 would pass a folder here: the other ranks must not write
        with tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, hooks=hooks) as sess:
            for _ in range(args.steps):
                losses.append(float(sess.run([train_op, loss], feed_dict=feed())[1]))
            values = sess.run(tf.compat.v1.global_variables())

    digest = hashlib.sha256(b"".join(np.ascontiguousarray(v).tobytes() for v in values)).hexdigest()
    print("RESULT " + json.dumps({"rank": hvd.rank(), "size": hvd.size(), "steps": len(losses),
                                  "first_loss": float(np.mean(losses[:10])), "last_loss": float(np.mean(losses[-10:])),
                                  "variables": digest}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
