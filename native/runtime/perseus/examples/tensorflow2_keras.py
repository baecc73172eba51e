"""Keras 3 `model.fit` with perseus (Horovod's Keras recipe), on synthetic data:

    perseusrun -np 2 -- python tensorflow2_keras.py [--epochs 4] [--steps-per-epoch 25]

Three changes to a Keras script: the optimizer wrapped in `hvd.DistributedOptimizer` (gradients averaged
over the ranks, fp16 on the wire unless PERSEUS_ALLREDUCE_DTYPE=1), the callbacks
`hvd.keras.callbacks.BroadcastGlobalVariablesCallback(0)` (rank 0's initial weights everywhere),
`MetricAverageCallback()` (logged metrics averaged over the ranks) and `LearningRateWarmupCallback`, and
checkpoints saved by rank 0 only (`--checkpoint-dir`). Every rank prints one `RESULT {json}` line: its rank, the loss per epoch
and a digest of its weights (equal on every rank).
"""
import argparse
import hashlib
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402


def synthetic_shard(rank, size, samples=4096, features=32, classes=4):
    """A classification problem (the same on every rank); each rank keeps every size-th sample."""
    rng = np.random.RandomState(11)
    x = rng.randn(samples, features).astype(np.float32)
    y = (x @ rng.randn(features, classes)).argmax(axis=1).astype(np.int64)
    return x[rank::size], y[rank::size]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--steps-per-epoch", type=int, default=25)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--checkpoint-dir", help="rank 0 saves the weights there after each epoch")
    args = parser.parse_args()

    hvd.init()
    tf.keras.utils.set_random_seed(hvd.rank())  # different on purpose: the broadcast callback makes them equal
    x, y = synthetic_shard(hvd.rank(), hvd.size())
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat().shuffle(512, seed=hvd.rank()).batch(args.batch_size)

    inputs = tf.keras.Input(shape=(x.shape[1],))
    hidden = tf.keras.layers.Dense(64, activation="relu")(inputs)
    hidden = tf.keras.layers.Dense(64, activation="relu")(hidden)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(4)(hidden))
    scaled_lr = 0.001 * hvd.size()
    model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(scaled_lr)),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    callbacks = [
        hvd.keras.callbacks.BroadcastGlobalVariablesCallback(0),
        hvd.keras.callbacks.MetricAverageCallback(),
        hvd.keras.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=1,
                                                       steps_per_epoch=args.steps_per_epoch),
    ]
    if args.checkpoint_dir and hvd.rank() == 0:  # the other ranks must not write
        path = os.path.join(args.checkpoint_dir, "checkpoint.weights.h5")
        callbacks.append(tf.keras.callbacks.ModelCheckpoint(path, save_weights_only=True))
    history = model.fit(dataset, steps_per_epoch=args.steps_per_epoch, epochs=args.epochs, callbacks=callbacks,
                        verbose=1 if hvd.rank() == 0 else 0)
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(w).tobytes() for w in model.get_weights())).hexdigest()
    print("RESULT " + json.dumps({"rank": hvd.rank(), "size": hvd.size(), "losses": history.history["loss"],
                                  "accuracy": history.history["accuracy"][-1], "variables": digest}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
