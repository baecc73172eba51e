"""An elastic TensorFlow 2 + Keras 3 training for tests/tensorflow/test_tf_elastic.py: linear regression in
float64, a custom loop (tf.GradientTape, hvd.keras.DistributedOptimizer over Keras 3 SGD) under hvd.elastic.run
with hvd.elastic.TensorFlowKerasState.

    tf_elastic_train.py OUT_DIR TOTAL_STEPS STEP_SECONDS COMMIT_EVERY

The files and variables are those of tests/run/scripts/elastic_train.py (the torch script; tests/support/elastic.py
reads them): OUT_DIR/pid.<host>_<slot>, OUT_DIR/progress (`step size`, rank 0), OUT_DIR/result.json (the final
weights, the data and per committed step the world size and each rank's sample indices), ELASTIC_TEST_HOLD=8
(every rank waits before the step after step 8 until OUT_DIR/go.8 exists). The data are sharded without a
sampler: each epoch is a permutation of the samples, and a step gives rank r the r-th BATCH of the samples the
epoch has not processed yet (all ranks compute every rank's part alike); an epoch ends when fewer than
size * BATCH are left.
"""

import json
import os
import sys
import time

import keras
import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import elastic_files  # noqa: E402

import perseus.tensorflow.horovod as hvd

SAMPLES, FEATURES, BATCH, LR = 48, 4, 2, 0.05


def data():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((SAMPLES, FEATURES))
    y = x @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.1 * rng.standard_normal(SAMPLES)
    return x, y


def progress(out, step, size):
    elastic_files.write_progress(out, hvd.rank(), step, size)


def parts_of_step(epoch, processed, size):
    """Every rank's sample indices for the next step (None: the epoch is over)."""
    order = np.random.default_rng(100 + epoch).permutation(SAMPLES).tolist()
    done = set(processed)
    left = [i for i in order if i not in done]
    if len(left) < size * BATCH:
        return None
    return [left[r * BATCH:(r + 1) * BATCH] for r in range(size)]


def main() -> None:
    out, total, pause, commit_every = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    holds = elastic_files.hold_steps()
    elastic_files.write_pid(out)
    x, y = data()
    hvd.init()
    model = tf.keras.Sequential([tf.keras.Input((FEATURES,), dtype="float64"),
                                 tf.keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros",
                                                       dtype="float64")])
    optimizer = hvd.keras.DistributedOptimizer(tf.keras.optimizers.SGD(learning_rate=LR))
    state = hvd.elastic.TensorFlowKerasState(model, optimizer, epoch=0, step=0, processed=[], history=[])

    def one_step(indices):
        with tf.GradientTape() as tape:
            pred = tf.squeeze(model(x[indices], training=True), 1)
            loss = tf.reduce_mean((pred - y[indices]) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    @hvd.elastic.run
    def train(state):
        while state.step < total:
            while state.step in holds and not hvd.broadcast_object(elastic_files.released(out, state.step)):
                progress(out, state.step, hvd.size())  # every rank in a collective: a lost one is noticed
                time.sleep(0.05)
            parts = parts_of_step(state.epoch, state.processed, hvd.size())
            if parts is None:
                state.epoch += 1
                state.processed = []
                continue
            one_step(parts[hvd.rank()])
            state.processed = state.processed + [i for part in parts for i in part]
            state.history = state.history + [{"size": hvd.size(), "parts": parts}]
            state.step += 1
            progress(out, state.step, hvd.size())
            time.sleep(pause)
            if state.step % commit_every == 0:
                print("COMMIT step {} size {} rank {}".format(state.step, hvd.size(), hvd.rank()), flush=True)
                state.commit()

    train(state)
    if hvd.rank() == 0:
        result = {"weights": model.get_weights()[0].flatten().tolist(), "history": state.history,
                  "x": x.tolist(), "y": y.tolist(), "keras": keras.__version__}
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(result, f)
    print("DONE rank {} of {}".format(hvd.rank(), hvd.size()), flush=True)


if __name__ == "__main__":
    main()
