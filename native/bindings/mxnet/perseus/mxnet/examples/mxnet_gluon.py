"""Gluon training on the dist_sync_perseus KVStore (gluon.Trainer, as with MXNet's own dist_sync), synthetic data:

    perseusrun -np 2 python -m perseus.mxnet.examples.mxnet_gluon [--epochs 3] [--batch-size 64]
    mpirun -np 2 ./config.sh python -m perseus.mxnet.examples.mxnet_gluon      # the seed's launch

The changes to a Gluon script written for `mx.kvstore.create('dist_sync')`: the store comes from
`perseus.mxnet.create('dist_sync_perseus')`, each process uses one device (`mx.gpu(kv.local_rank)`, or the
--gpus id config.sh derives; CPU when MXNet has no GPU), rank 0's initial parameters are broadcast, and
trainer.step() gets the global batch (the store sums the gradients over the ranks, fp16 on the wire unless
PERSEUS_ALLREDUCE_DTYPE=1). Every rank prints `RESULT {json}`: its rank, its device, the loss per epoch
and a digest of its parameters (equal on every rank).
"""
import argparse
import hashlib
import json
import os

import mxnet as mx
import numpy as np

import perseus.mxnet as perseus


def synthetic_shard(rank, samples, seed=42):
    """28x28 noise images; label k brightens the k-th of ten 2-row bands. Each rank draws its own shard."""
    rng = np.random.RandomState(seed + rank)
    labels = rng.randint(0, 10, size=samples)
    images = rng.rand(samples, 1, 28, 28).astype(np.float32)
    for k in range(10):
        images[labels == k, 0, 2 * k:2 * k + 2, :] += 0.2
    return images, labels.astype(np.float32)


def device(kv, gpus):
    """One device per process: the id from --gpus (config.sh), else the store's local_rank; CPU without GPUs."""
    if mx.context.num_gpus() == 0:
        return mx.cpu()
    return mx.gpu(int(gpus) if gpus else kv.local_rank)


def digest(params):
    h = hashlib.sha256()
    for name in sorted(params.keys()):
        h.update(params[name].data().asnumpy().tobytes())
    return h.hexdigest()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--samples", type=int, default=1024, help="samples per rank")
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--kv-store", default="dist_sync_perseus")
    parser.add_argument("--gpus", default=os.environ.get("MXNET_VISIBLE_DEVICE", ""), help="this process's GPU id")
    args = parser.parse_args(argv)

    kv = perseus.create(args.kv_store) if "perseus" in args.kv_store else mx.kvstore.create(args.kv_store)
    ctx = device(kv, args.gpus)
    mx.random.seed(kv.rank)  # different on purpose: the broadcast makes them equal
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Conv2D(16, kernel_size=3, activation="relu"), mx.gluon.nn.MaxPool2D(),
            mx.gluon.nn.Flatten(), mx.gluon.nn.Dense(64, activation="relu"), mx.gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize()
    net(mx.nd.zeros((1, 1, 28, 28), ctx=ctx))  # materialise the deferred shapes before the broadcast
    params = net.collect_params()
    perseus.broadcast_parameters(params, root_rank=0)
    trainer = mx.gluon.Trainer(params, "sgd", {"learning_rate": args.lr, "momentum": 0.9}, kvstore=kv)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    images, labels = synthetic_shard(kv.rank, args.samples)
    batches = mx.io.NDArrayIter(images, labels, batch_size=args.batch_size)
    losses = []
    for _ in range(args.epochs):
        batches.reset()
        total, count = 0.0, 0
        for batch in batches:
            x, y = batch.data[0].as_in_context(ctx), batch.label[0].as_in_context(ctx)
            with mx.autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0] * kv.num_workers)  # the store sums: normalise by the global batch
            total += float(loss.sum().asscalar())
            count += x.shape[0]
        losses.append(total / count)
    print("RESULT " + json.dumps({"rank": kv.rank, "size": kv.num_workers, "device": str(ctx),
                                  "gpus": args.gpus, "losses": losses, "params": digest(params)}), flush=True)


if __name__ == "__main__":
    main()
