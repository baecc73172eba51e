"""A tf.estimator.Estimator trained with perseus (Horovod's Estimator recipe), on synthetic data:

    perseusrun -np 2 -- python tensorflow_regression_estimator.py [--steps 200] [--batch-size 32] [--model-dir DIR]

tf.estimator exists up to TensorFlow 2.15 (tensorflow-cpu 2.14.1 is the matrix's Estimator cell); it was
removed in 2.16. The model_fn builds a TF1 graph whose optimizer is `hvd.DistributedOptimizer` around
tf.compat.v1.train.AdamOptimizer (gradients averaged over the ranks, fp16 on the wire unless
PERSEUS_ALLREDUCE_DTYPE=1); `hvd.BroadcastGlobalVariablesHook(0)` gives every rank rank 0's initial
variables. Only rank 0 keeps its checkpoints in --model-dir; the other ranks write theirs to a temporary
folder, removed at the end. Every rank prints one `RESULT {json}` line: its rank, first and last loss
and a digest of its final variables (read back from its checkpoint: equal on every rank).
(Not named tensorflow_estimator.py: the script's folder comes first on sys.path, and that name would hide
TensorFlow's own tensorflow_estimator package.)
"""
import argparse
import hashlib
import json
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402

FEATURES = 16
LOSS = "regression_loss"


def synthetic_shard(rank, size, samples=2048):
    """One regression problem (the same on every rank); each rank keeps every size-th sample."""
    rng = np.random.RandomState(7)
    x = rng.randn(samples, FEATURES).astype(np.float32)
    y = (np.tanh(x.dot(rng.randn(FEATURES, 1))) + 0.1 * rng.randn(samples, 1)).astype(np.float32)
    return x[rank::size], y[rank::size]


class LossRecorder(tf.compat.v1.train.SessionRunHook):
    """Appends the loss of every training step (the model_fn's tensor named LOSS) to `losses`."""

    def __init__(self, losses):
        self._loss = None
        self._losses = losses

    def begin(self):
        self._loss = tf.compat.v1.get_default_graph().get_tensor_by_name(LOSS + ":0")

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        self._losses.append(float(run_values.results))


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1

    def dense(inputs, units, name):
        w = v1.get_variable(name + "/kernel", [inputs.shape[1], units], initializer=v1.glorot_uniform_initializer())
        b = v1.get_variable(name + "/bias", [units], initializer=v1.zeros_initializer())
        return tf.matmul(inputs, w) + b

    prediction = dense(tf.nn.relu(dense(features["x"], 64, "hidden")), 1, "output")
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=prediction)
    loss = tf.identity(tf.reduce_mean(tf.square(prediction - labels)), name=LOSS)
    opt = hvd.DistributedOptimizer(v1.train.AdamOptimizer(params["lr"] * hvd.size()))
    train_op = opt.minimize(loss, global_step=v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--model-dir", default=None, help="rank 0's checkpoint folder (default: a temporary one)")
    args = parser.parse_args()
    if not hasattr(tf, "estimator"):
        raise SystemExit("tf.estimator is not in TensorFlow %s (removed in 2.16): run this example with "
                         "TensorFlow <= 2.15, e.g. tensorflow-cpu==2.14.1" % tf.__version__)

    hvd.init()
    x_all, y_all = synthetic_shard(hvd.rank(), hvd.size())
    scratch = tempfile.mkdtemp(prefix="perseus-estimator-")
    model_dir = args.model_dir if (hvd.rank() == 0 and args.model_dir) else scratch
    losses = []
    # a checkpoint at the end of train() (and every 10 minutes): the variables are read back from it
    config = tf.estimator.RunConfig(tf_random_seed=hvd.rank(),  # different on purpose: the broadcast equalises
                                    log_step_count_steps=None)
    estimator = tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config, params={"lr": args.lr})

    def input_fn():
        data = tf.data.Dataset.from_tensor_slices(({"x": x_all}, y_all))
        return data.shuffle(len(x_all), seed=hvd.rank()).repeat().batch(args.batch_size)

    estimator.train(input_fn, steps=args.steps, hooks=[hvd.BroadcastGlobalVariablesHook(0), LossRecorder(losses)])
    names = sorted(estimator.get_variable_names())
    values = [np.asarray(estimator.get_variable_value(name)) for name in names]
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(v).tobytes() for v in values)).hexdigest()
    print("RESULT " + json.dumps({"rank": hvd.rank(), "size": hvd.size(), "steps": len(losses),
                                  "first_loss": float(np.mean(losses[:10])), "last_loss": float(np.mean(losses[-10:])),
                                  "variables": digest, "variable_names": names}), flush=True)
    hvd.shutdown()
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
