"""One rank of an MXNet test job (started by perseusrun); prints one `REPORT {json}` line.

    python mxnet_cases.py gluon     # DistributedTrainer on a tiny Gluon model, per-rank data and init
    python mxnet_cases.py kvstore   # dist_sync_perseus: Sum/Max/Min pushes, param_only, pushpull, Trainer
"""
import hashlib
import json
import sys

import mxnet as mx
import numpy as np

import perseus.mxnet as hvd


def report(**fields):
    print("REPORT " + json.dumps(dict(fields, rank=hvd.rank())), flush=True)


def digest(params):
    h = hashlib.sha256()
    for name in sorted(params.keys()):
        h.update(params[name].data().asnumpy().tobytes())
    return h.hexdigest()


def tiny_net(seed):
    mx.random.seed(seed)
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(16, in_units=8, activation="relu"), mx.gluon.nn.Dense(1, in_units=16))
    net.initialize(mx.init.Xavier())
    return net


def data(rank, n=64):
    rng = np.random.RandomState(100 + rank)  # each rank its own batch
    x = rng.randn(n, 8).astype(np.float32)
    w = np.linspace(-1.0, 1.0, 8).astype(np.float32)
    y = (x @ w)[:, None] + 0.5
    return mx.nd.array(x), mx.nd.array(y)


def gluon_case():
    net = tiny_net(seed=1 + hvd.rank())  # different initial weights: broadcast_parameters must fix them
    params = net.collect_params()
    before = digest(params)
    hvd.broadcast_parameters(params, root_rank=0)
    after_broadcast = digest(params)
    trainer = hvd.DistributedTrainer(params, "sgd", {"learning_rate": 0.05})
    x, y = data(hvd.rank())
    loss_fn = mx.gluon.loss.L2Loss()
    losses = []
    for _ in range(30):
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(float(loss.mean().asscalar()))
    info = hvd._world.engine().info()
    report(before=before, after_broadcast=after_broadcast, final=digest(params), losses=losses,
           size=hvd.size(), local_rank=hvd.local_rank(), local_size=hvd.local_size(),
           wire_fp16=info["intra_fp16"], collectives=info["collectives"])


def pushed(rank, op):
    # the same function the test evaluates for every rank (the 1-process computation)
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    return base * (rank + 1) - 4.0 * rank if op != "min" else base * (1 - 2 * rank) + rank


def kvstore_case():
    kv = hvd.create("dist_sync_perseus")
    rank = kv.rank
    out = {"type": kv.type, "num_workers": kv.num_workers, "rank": rank, "local_rank": kv.local_rank,
           "capable_optimizer": kv.is_capable("optimizer")}
    zeros = mx.nd.zeros((2, 3))
    for key, op in ((0, hvd.PerseusOp.Sum), (1, hvd.PerseusOp.Max), (2, hvd.PerseusOp.Min)):
        kv.init(key, zeros)
        kv.push(key, mx.nd.array(pushed(rank, op)), op=op)
        result = mx.nd.zeros((2, 3))
        kv.pull(key, out=result)
        out[op] = result.asnumpy().tolist()
    # a list of values (devices) is summed locally, then over the ranks
    kv.init(3, zeros)
    kv.push(3, [mx.nd.ones((2, 3)) * (rank + 1), mx.nd.ones((2, 3)) * 10])
    result = mx.nd.zeros((2, 3))
    kv.pull(3, out=result)
    out["list_sum"] = result.asnumpy().tolist()
    # param_only: rank 0's value once, never updated by the store
    kv.init("w", mx.nd.full((4,), 7.0 + rank), param_only=True)
    try:
        kv.push("w", mx.nd.ones((4,)))
        out["param_only_push"] = "accepted"
    except ValueError as error:
        out["param_only_push"] = str(error)
    w = mx.nd.zeros((4,))
    kv.pull("w", out=w)
    out["param_only"] = w.asnumpy().tolist()
    # pushpull in place
    v = mx.nd.full((3,), float(rank + 1))
    kv.pushpull("pp", v)
    out["pushpull"] = v.asnumpy().tolist()
    kv._barrier()
    # gluon.Trainer accepts the store as it accepts MXNet's own
    net = tiny_net(seed=5 + rank)
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05}, kvstore=kv)
    x, y = data(rank)
    losses = []
    for _ in range(10):
        with mx.autograd.record():
            loss = mx.gluon.loss.L2Loss()(net(x), y)
        loss.backward()
        trainer.step(x.shape[0] * kv.num_workers)
        losses.append(float(loss.mean().asscalar()))
    out["trainer_update_on_kvstore"] = bool(trainer._update_on_kvstore)
    out["trainer_final"] = digest(net.collect_params())
    out["trainer_losses"] = losses
    report(**out)


def module_case(optimizer_api=False):
    """Module.fit with the store as its kvstore (updates stay local: is_capable('optimizer') is False), or
    (optimizer_api) without a kvstore and with hvd.DistributedOptimizer."""
    kv = None if optimizer_api else hvd.create("dist_sync_perseus")
    x, y = data(hvd.rank())
    it = mx.io.NDArrayIter(x, y, batch_size=16, label_name="lin_reg_label")
    sym = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, name="fc"), name="lin_reg")
    mod = mx.mod.Module(sym, data_names=["data"], label_names=["lin_reg_label"])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mx.random.seed(3)  # the same start on every rank: Module.fit with update_on_kvstore=False does not sync it
    mod.init_params(mx.init.Normal(0.5))
    before = float(mod.score(it, "mse")[0][1])
    it.reset()
    if optimizer_api:
        opt = hvd.DistributedOptimizer(mx.optimizer.create("sgd", learning_rate=0.05, rescale_grad=1.0 / 16))
        mod.fit(it, num_epoch=5, kvstore=None, optimizer=opt, force_init=False)
    else:
        mod.fit(it, num_epoch=5, kvstore=kv, optimizer="sgd", optimizer_params={"learning_rate": 0.05},
                force_init=False)
    after = float(mod.score(it, "mse")[0][1])
    arg_params, _ = mod.get_params()
    h = hashlib.sha256()
    for name in sorted(arg_params):
        h.update(arg_params[name].asnumpy().tobytes())
    report(mse_before=before, mse_after=after, final=h.hexdigest())


def nancheck_case():
    """DistributedTrainer.step with an inf gradient on rank 1 (the NaN check's variable is set by the test)."""
    net = tiny_net(seed=1)
    params = net.collect_params()
    trainer = hvd.DistributedTrainer(params, "sgd", {"learning_rate": 0.05})
    x, y = data(hvd.rank())
    with mx.autograd.record():
        loss = mx.gluon.loss.L2Loss()(net(x), y)
    loss.backward()
    if hvd.rank() == 1:
        grad = list(params.values())[-1].grad()
        grad[:] = float("inf")
    try:
        trainer.step(x.shape[0])
        mx.nd.waitall()
        finite = bool(all(np.isfinite(p.data().asnumpy()).all() for p in params.values()))
        report(raised=None, finite=finite)
    except Exception as error:  # the engine's NonFiniteError, however the binding surfaces it
        report(raised=type(error).__name__, message=str(error))


if __name__ == "__main__":
    hvd.init()
    {"gluon": gluon_case, "kvstore": kvstore_case, "module": module_case, "nancheck": nancheck_case,
     "optimizer": lambda: module_case(optimizer_api=True)}[sys.argv[1]]()
    hvd.shutdown()
