"""A PerseusSyncBatchNorm job (perseusrun, or 4 processes as 2 nodes x 2 ranks): python sync_bn.py SCOPE.

Rank r holds rows [offset_r, offset_r + batch_r) of one global batch (batch sizes differ: 3 + 2 r) and its
rows of one head gradient. It runs PerseusSyncBatchNorm(comm_scope=SCOPE), imperative and hybridized
inside a network, and, as the reference, MXNet's own BatchNorm over the concatenation of the batches of
its scope (every rank for 1, its node's ranks for 0). It prints one `REPORT {json}` line with both.
"""
import json
import sys

import mxnet as mx
import numpy as np

import perseus.mxnet as hvd

CHANNELS, SHAPE = 4, (2, 3)


def batch_sizes(size):
    return [3 + 2 * r for r in range(size)]


def global_data(size):
    rng = np.random.RandomState(5)
    total = sum(batch_sizes(size))
    x = (rng.randn(total, CHANNELS, *SHAPE) * np.arange(1, CHANNELS + 1).reshape(1, -1, 1, 1) + 3).astype(np.float32)
    head = rng.randn(total, CHANNELS, *SHAPE).astype(np.float32)
    return x, head


def rows_of(ranks, size):
    sizes = batch_sizes(size)
    offsets = np.cumsum([0] + sizes)
    return np.concatenate([np.arange(offsets[r], offsets[r + 1]) for r in ranks])


def set_affine(block):
    block.gamma.set_data(mx.nd.array([0.5, 1.0, 1.5, 2.0]))
    block.beta.set_data(mx.nd.array([0.1, -0.2, 0.3, -0.4]))


def run(block, x, head, hybrid):
    net = mx.gluon.nn.HybridSequential()
    net.add(block)
    net.initialize()
    set_affine(block)
    if hybrid:
        net.hybridize()
    data = mx.nd.array(x)
    data.attach_grad()
    for _ in range(2):  # two steps: the moving statistics move twice
        with mx.autograd.record():
            out = net(data)
        out.backward(mx.nd.array(head))
    return {"out": out.asnumpy().tolist(), "grad": data.grad.asnumpy().tolist(),
            "moving_mean": block.running_mean.data().asnumpy().tolist(),
            "moving_var": block.running_var.data().asnumpy().tolist(),
            "dgamma": block.gamma.grad().asnumpy().tolist(), "dbeta": block.beta.grad().asnumpy().tolist(),
            "inference": net(data).asnumpy().tolist()}


def main():
    scope = int(sys.argv[1])
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    node = hvd.cross_rank()
    x_all, head_all = global_data(size)
    mine = rows_of([rank], size)
    report = {"rank": rank, "size": size, "node": node, "local_size": hvd.local_size(), "batch": len(mine)}
    for hybrid in (False, True):
        sync = mx.gluon.contrib.nn.PerseusSyncBatchNorm(in_channels=CHANNELS, comm_scope=scope, momentum=0.8)
        report["hybrid" if hybrid else "imperative"] = run(sync, x_all[mine], head_all[mine], hybrid)
    # the reference: one MXNet BatchNorm over the scope's concatenated batch, the rows of this rank cut out
    scope_ranks = list(range(size)) if scope == 1 else [r for r in range(size) if r // hvd.local_size() == node]
    rows = rows_of(scope_ranks, size)
    ref = run(mx.gluon.nn.BatchNorm(in_channels=CHANNELS, momentum=0.8), x_all[rows], head_all[rows], False)
    where = [list(rows).index(i) for i in mine]
    report["reference"] = {"out": np.array(ref["out"])[where].tolist(), "grad": np.array(ref["grad"])[where].tolist(),
                           "moving_mean": ref["moving_mean"], "moving_var": ref["moving_var"],
                           "dgamma": ref["dgamma"], "dbeta": ref["dbeta"],
                           "inference": np.array(ref["inference"])[where].tolist()}
    # what a plain BatchNorm gives on this rank's batch alone (the statistics must not be these)
    report["alone_out"] = run(mx.gluon.nn.BatchNorm(in_channels=CHANNELS, momentum=0.8), x_all[mine], head_all[mine],
                              False)["out"]
    print("REPORT " + json.dumps(report), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
