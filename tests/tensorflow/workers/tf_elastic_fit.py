"""An elastic Keras 3 model.fit for tests/tensorflow/test_tf_elastic.py: linear regression in float64 with
hvd.keras.elastic's KerasState, CommitStateCallback, UpdateBatchStateCallback and UpdateEpochStateCallback under
hvd.elastic.run (reached as `hvd.elastic` after `import perseus.tensorflow.horovod.keras as hvd`).

    tf_elastic_fit.py OUT_DIR EPOCHS BATCHES_PER_COMMIT

Files as tests/tensorflow/workers/tf_elastic_train.py writes them (pid.<host>_<slot>, progress, result.json with
the committed steps' sample indices; ELASTIC_TEST_HOLD=N holds every rank after step N until OUT_DIR/go.N exists).
Each attempt fits one epoch at a time on the samples the epoch has not processed yet (state.processed, committed):
step j of the epoch gives rank r the (j * size + r)-th BATCH of them, so a retried epoch skips what is committed.
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

import perseus.tensorflow.horovod.keras as hvd
from perseus.tensorflow.horovod import broadcast_object

SAMPLES, FEATURES, BATCH, LR = 48, 4, 2, 0.05


def data():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((SAMPLES, FEATURES))
    y = x @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.1 * rng.standard_normal(SAMPLES)
    return x, y


def remaining(state):
    done = set(state.processed)
    return [i for i in np.random.default_rng(100 + state.epoch).permutation(SAMPLES).tolist() if i not in done]


def part(left, step, rank, size):
    start = (step * size + rank) * BATCH
    return left[start:start + BATCH]


def main() -> None:
    out, epochs, per_commit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    holds = elastic_files.hold_steps()
    elastic_files.write_pid(out)
    x, y = data()
    hvd.init()
    model = tf.keras.Sequential([tf.keras.Input((FEATURES,), dtype="float64"),
                                 tf.keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros",
                                                       dtype="float64")])
    model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(learning_rate=LR)), loss="mse")
    state = hvd.elastic.KerasState(model, epoch=0, batch=0, step=0, processed=[], history=[])

    def progress():
        elastic_files.write_progress(out, hvd.rank(), state.step, hvd.size())

    class Record(tf.keras.callbacks.Callback):
        """Before the commit callback: the step's samples go into the state that it commits."""

        def on_train_begin(self, logs=None):
            self.left = remaining(state)

        def on_train_batch_end(self, batch, logs=None):
            size = hvd.size()
            parts = [part(self.left, batch, r, size) for r in range(size)]
            state.processed = state.processed + [i for p in parts for i in p]
            state.history = state.history + [{"size": size, "parts": parts, "epoch": state.epoch}]
            state.step += 1
            progress()
            while state.step in holds and not broadcast_object(elastic_files.released(out, state.step)):
                progress()
                time.sleep(0.05)

        def on_epoch_end(self, epoch, logs=None):
            state.processed = []

    callbacks = [Record(), hvd.elastic.UpdateBatchStateCallback(state), hvd.elastic.UpdateEpochStateCallback(state),
                 hvd.elastic.CommitStateCallback(state, batches_per_commit=per_commit)]

    @hvd.elastic.run
    def train(state):
        while state.epoch < epochs:
            left, size = remaining(state), hvd.size()
            steps = len(left) // (size * BATCH)
            mine = [i for step in range(steps) for i in part(left, step, hvd.rank(), size)]
            state.model.fit(x[mine], y[mine][:, None], batch_size=BATCH, epochs=1, shuffle=False, verbose=0,
                            callbacks=callbacks)

    train(state)
    if hvd.rank() == 0:
        result = {"weights": model.get_weights()[0].flatten().tolist(), "history": state.history,
                  "x": x.tolist(), "y": y.tolist(), "keras": keras.__version__, "epoch": state.epoch,
                  "batch": state.batch}
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(result, f)
    print("DONE rank {} of {}".format(hvd.rank(), hvd.size()), flush=True)


if __name__ == "__main__":
    main()
