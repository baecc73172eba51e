"""One rank of a 2-rank job (run by perseusrun): hvd.DistributedOptimizer(backward_passes_per_step=2) under
model.fit, in the Keras tf.keras is (Keras 3, or Keras 2 with TF_USE_LEGACY_KERAS=1).

A Dense(1) kernel [2, 1] from zeros, no bias, loss = sum(prediction): each step's gradient is this rank's input
row C[rank]. SGD(learning_rate=1), 4 steps of batch 1. Prints one `REPORT {json}` line with, for
average_aggregated_gradients False and True: the kernel after each step, the optimizer's iterations and the
aggregation counter after the 4 steps."""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402

C = {0: [1.0, 2.0], 1: [3.0, 0.5]}  # exact in float16: the gradient path's wire
STEPS = 4


def run(rank: int, average: bool) -> dict:
    keras = tf.keras
    model = keras.Sequential([keras.Input(shape=(2,)),
                              keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])
    optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), backward_passes_per_step=2,
                                         average_aggregated_gradients=average)
    model.compile(optimizer=optimizer, loss=lambda y_true, y_pred: tf.reduce_sum(y_pred))
    kernels = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            kernels.append(model.layers[0].kernel.numpy().reshape(-1).tolist())

    x = np.array([C[rank]] * STEPS, dtype=np.float32)
    model.fit(x, np.zeros((STEPS, 1), np.float32), batch_size=1, epochs=1, shuffle=False, verbose=0,
              callbacks=[Record()])
    return {"kernels": kernels, "iterations": int(optimizer.iterations.numpy()),
            "counter": int(optimizer._agg_helper.counter.numpy())}


def main() -> int:
    hvd.init()
    rank = hvd.rank()
    report = {"rank": rank, "keras": tf.keras.__name__,
              "sum": run(rank, average=False), "average": run(rank, average=True)}
    print("REPORT " + json.dumps(report), flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
