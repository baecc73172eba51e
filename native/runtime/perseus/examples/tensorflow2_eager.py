"""A TensorFlow 2 eager training loop with perseus's DistributedGradientTape, on synthetic MNIST-shaped data:

    perseusrun -np 2 -- python tensorflow2_eager.py [--steps 60] [--batch-size 64]

The one-line change from Horovod: `import perseus.tensorflow.horovod as hvd`. The step is a tf.function;
`hvd.DistributedGradientTape` averages the gradients over the ranks (fp16 on the wire unless
PERSEUS_ALLREDUCE_DTYPE=1); after the first step `hvd.broadcast_variables` copies rank 0's model and
optimizer state everywhere. Every rank prints one `RESULT {json}` line: its rank, first and last loss, and
a digest of its variables (equal on every rank).
"""
import argparse
import hashlib
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import perseus.tensorflow.horovod as hvd  # noqa: E402


def synthetic_mnist(samples, seed):
    """28x28 noise images; label k brightens the k-th of ten 2-row bands (learnable, like digits)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, samples)
    images = 0.5 * rng.random((samples, 28, 28, 1), dtype=np.float32)
    for k in range(10):
        images[labels == k, 2 * k:2 * k + 2, :, 0] += 0.5
    return images, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    hvd.init()
    tf.keras.utils.set_random_seed(hvd.rank())  # different on purpose: the broadcast makes them equal
    images, labels = synthetic_mnist(args.batch_size * args.steps, seed=hvd.rank())  # this rank's shard
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().shuffle(1000).batch(args.batch_size)

    model = tf.keras.Sequential([
        tf.keras.Input(shape=(28, 28, 1)),
        tf.keras.layers.Conv2D(16, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.Adam(0.001 * hvd.size())

    @tf.function
    def training_step(x, y, first_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        # after the first step, so that the optimizer's slots exist and are broadcast too
        if first_batch:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(opt.variables, root_rank=0)
        return loss

    losses = []
    for step, (x, y) in enumerate(dataset.take(args.steps)):
        losses.append(float(training_step(x, y, step == 0)))
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(v.numpy()).tobytes() for v in model.variables)).hexdigest()
    print("RESULT " + json.dumps({"rank": hvd.rank(), "size": hvd.size(), "steps": len(losses),
                                  "first_loss": float(np.mean(losses[:5])), "last_loss": float(np.mean(losses[-5:])),
                                  "variables": digest}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
