"""Module.fit on the dist_sync_perseus KVStore (the seed's KVStore recipe, manual 4.6), synthetic data:

    mpirun -np 2 ./config.sh python -m perseus.mxnet.examples.mxnet_module      # the seed's launch
    perseusrun -np 2 python -m perseus.mxnet.examples.mxnet_module [--epochs 4]

The one change to a Module script written for MXNet's dist_sync: `kv = perseus.create('dist_sync_perseus')`
where it called `mx.kvstore.create(args.kv_store)`. Each process binds one device: the --gpus id that
config.sh derives from OMPI_COMM_WORLD_RANK % OMPI_COMM_WORLD_LOCAL_SIZE (or kv.local_rank), CPU when
MXNet has no GPU. Updates stay in the process (the store is not capable of 'optimizer'); the store sums
the gradients (fp16 on the wire unless PERSEUS_ALLREDUCE_DTYPE=1), so rescale_grad is 1/(batch x workers).
Every rank prints `RESULT {json}`: its rank, its device, the accuracy before training and per epoch, and a digest of its
parameters (equal on every rank).
"""
import argparse
import hashlib
import json
import os

import mxnet as mx
import numpy as np

import perseus.mxnet as perseus


def synthetic_shard(rank, samples, features=32, classes=4, seed=3):
    """A classification problem (the same on every rank); each rank draws its own samples."""
    w = np.random.RandomState(seed).randn(features, classes)
    x = np.random.RandomState(seed + 1 + rank).randn(samples, features).astype(np.float32)
    return x, (x @ w).argmax(axis=1).astype(np.float32)


def mlp(classes):
    data = mx.sym.Variable("data")
    hidden = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=64, name="fc1"), act_type="relu")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(hidden, num_hidden=classes, name="fc2"), name="softmax")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--samples", type=int, default=1024, help="samples per rank")
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--kv-store", default="dist_sync_perseus")
    parser.add_argument("--gpus", default=os.environ.get("MXNET_VISIBLE_DEVICE", ""), help="this process's GPU id")
    args = parser.parse_args(argv)

    kv = perseus.create(args.kv_store) if "perseus" in args.kv_store else mx.kvstore.create(args.kv_store)
    if mx.context.num_gpus() == 0:
        ctx = mx.cpu()
    else:
        ctx = mx.gpu(int(args.gpus) if args.gpus else kv.local_rank)
    x, y = synthetic_shard(kv.rank, args.samples)
    train = mx.io.NDArrayIter(x, y, batch_size=args.batch_size, shuffle=True)
    mod = mx.mod.Module(mlp(4), context=ctx)
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mx.random.seed(kv.rank)  # different on purpose: rank 0's parameters are broadcast below
    mod.init_params(mx.init.Xavier())
    arg_params, aux_params = mod.get_params()
    # with updates in the process (update_on_kvstore False) Module.fit does not pull initial values: sync them
    perseus.broadcast_parameters(arg_params, root_rank=0)
    mod.set_params(arg_params, aux_params)

    accuracy_before = float(mod.score(train, "acc")[0][1])
    train.reset()  # score leaves the iterator at its end; fit starts from where it is
    accuracy = []
    callback = lambda epoch, symbol, arg, aux: accuracy.append(float(mod.score(train, "acc")[0][1]))  # noqa: E731
    mod.fit(train, num_epoch=args.epochs, kvstore=kv, optimizer="sgd",
            optimizer_params={"learning_rate": args.lr, "rescale_grad": 1.0 / (args.batch_size * kv.num_workers)},
            epoch_end_callback=callback, force_init=False)
    arg_params, _ = mod.get_params()
    h = hashlib.sha256()
    for name in sorted(arg_params):
        h.update(arg_params[name].asnumpy().tobytes())
    print("RESULT " + json.dumps({"rank": kv.rank, "size": kv.num_workers, "device": str(ctx), "gpus": args.gpus,
                                  "accuracy_before": accuracy_before, "accuracy": accuracy, "params": h.hexdigest()}), flush=True)


if __name__ == "__main__":
    main()
