"""MNIST-shaped training with the Horovod API of perseus.mxnet on synthetic data (no download):

    perseusrun -np 2 python -m perseus.mxnet.examples.mxnet_mnist [--epochs 3] [--batch-size 64]

Each rank draws its own shard of 28x28 "digits" (ten class templates plus noise), starts from rank 0's
weights (broadcast_parameters) and trains an MLP with DistributedTrainer (gradients averaged over the
ranks, fp16 on the wire unless PERSEUS_ALLREDUCE_DTYPE=1). Every rank prints `EPOCH <n> loss <x>` and at
the end `PARAMS <sha256 of its parameters>`: equal on all ranks.
"""
import argparse
import hashlib

import mxnet as mx
import numpy as np

import perseus.mxnet as hvd


def synthetic_shard(rank, samples, seed=42):
    templates = np.random.RandomState(seed).rand(10, 28 * 28).astype(np.float32)  # the same on every rank
    rng = np.random.RandomState(seed + 1 + rank)  # this rank's shard
    labels = rng.randint(0, 10, size=samples)
    images = templates[labels] + 0.3 * rng.randn(samples, 28 * 28).astype(np.float32)
    return mx.nd.array(images), mx.nd.array(labels)


def parameters_digest(params):
    h = hashlib.sha256()
    for name in sorted(params.keys()):
        h.update(params[name].data().asnumpy().tobytes())
    return h.hexdigest()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--samples", type=int, default=1024, help="samples per rank")
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args(argv)

    hvd.init()
    mx.random.seed(hvd.rank())  # different on purpose: broadcast_parameters makes them equal
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(128, in_units=28 * 28, activation="relu"), mx.gluon.nn.Dense(10, in_units=128))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    params = net.collect_params()
    hvd.broadcast_parameters(params, root_rank=0)
    trainer = hvd.DistributedTrainer(params, "sgd", {"learning_rate": args.lr, "momentum": 0.9})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    images, labels = synthetic_shard(hvd.rank(), args.samples)
    batches = mx.io.NDArrayIter(images, labels, batch_size=args.batch_size, shuffle=False)
    for epoch in range(args.epochs):
        batches.reset()
        total, count = 0.0, 0
        for batch in batches:
            x, y = batch.data[0], batch.label[0]
            with mx.autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
            total += float(loss.sum().asscalar())
            count += x.shape[0]
        print("EPOCH %d loss %.6f" % (epoch, total / count), flush=True)
    print("PARAMS %s" % parameters_digest(params), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
