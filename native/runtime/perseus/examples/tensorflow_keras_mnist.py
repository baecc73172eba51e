"""Horovod's Keras MNIST recipe on perseus, with synthetic MNIST-shaped data (no download):

    perseusrun -np 2 -- python tensorflow_keras_mnist.py [--epochs 3] [--steps-per-epoch 20]

The one-line change from Horovod: `import perseus.tensorflow.horovod as hvd`. The learning rate is scaled
by the number of ranks and warmed up; rank 0's weights are broadcast at the start; metrics are averaged
over the ranks; only rank 0 prints. The labels are a fixed function of the images, so the loss falls.
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402


def synthetic_mnist(samples: int, seed: int):
    """28x28 images; the label is the brightest of ten fixed image regions (learnable, like digits)."""
    rng = np.random.default_rng(seed)
    images = rng.random((samples, 28, 28, 1), dtype=np.float32)
    regions = images[:, :20, :, 0].reshape(samples, 10, 56).mean(axis=2)
    labels = regions.argmax(axis=1).astype(np.int64)
    return images, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps-per-epoch", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    hvd.init()
    images, labels = synthetic_mnist(args.batch_size * args.steps_per_epoch, seed=hvd.rank())  # one shard per rank
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().shuffle(1000).batch(args.batch_size)

    model = tf.keras.Sequential([
        tf.keras.Input(shape=(28, 28, 1)),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    scaled_lr = 0.001 * hvd.size()
    opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(scaled_lr))
    model.compile(optimizer=opt, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    callbacks = [
        hvd.keras.callbacks.BroadcastGlobalVariablesCallback(0),
        hvd.keras.callbacks.MetricAverageCallback(),
        hvd.keras.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=1,
                                                       steps_per_epoch=args.steps_per_epoch, verbose=1),
    ]
    history = model.fit(dataset, steps_per_epoch=args.steps_per_epoch, epochs=args.epochs, callbacks=callbacks,
                        verbose=1 if hvd.rank() == 0 else 0)
    if hvd.rank() == 0:
        losses = history.history["loss"]
        print("ranks: %d; loss per epoch (averaged over ranks): %s; final accuracy %.3f"
              % (hvd.size(), ", ".join("%.4f" % v for v in losses), history.history["accuracy"][-1]))
    hvd.shutdown()


if __name__ == "__main__":
    main()
