"""One rank of an MXNet test job (started by perseusrun); prints one `REPORT {json}` line.

    python mxnet_cases.py gluon     # DistributedTrainer on a tiny Gluon model, per-rank data and init
    python mxnet_cases.py kvstore   # dist_sync_perseus: Sum/Max/Min pushes, param_only, pushpull, Trainer
    python mxnet_cases.py horovod_api  # Horovod 0.28's calls: ops, scaling, reducescatter, alltoall, objects
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


def horovod_api_case():
    """The Horovod calls whose results are checked by the test against numpy (rank r holds values of rank r)."""
    r, n = hvd.rank(), hvd.size()
    out = {}
    # float32 values fp16 cannot hold: an exact sum (Horovod's hvd.allreduce applies no compression by itself)
    exact = mx.nd.array([1.0001, 3.14159265, 1e-5 + r, 65519.0 + r], dtype="float32")
    out["sum_fp32"] = hvd.allreduce(exact, op=hvd.Sum, name="exact").asnumpy().tolist()
    scalar = hvd.allreduce(mx.nd.array(2.0 + r, dtype="float32"), op=hvd.Sum, name="scalar")
    out["scalar_shape"] = list(scalar.shape)
    out["scalar"] = float(scalar.asnumpy().reshape(-1)[0])
    t = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * r)
    out["min"] = hvd.allreduce(t, op=hvd.Min, name="min").asnumpy().tolist()
    out["max"] = hvd.allreduce(t, op=hvd.Max, name="max").asnumpy().tolist()
    out["product"] = hvd.allreduce(t, op=hvd.Product, name="product").asnumpy().tolist()
    ints = mx.nd.array([3, 7, -5], dtype="int32")
    out["prescaled_int"] = hvd.allreduce(ints, op=hvd.Sum, prescale_factor=0.5, name="pre").asnumpy().tolist()
    out["average_int"] = hvd.allreduce(mx.nd.array([3 + r, -7], dtype="int64"), name="avgint").asnumpy().tolist()
    rows = mx.nd.array(np.arange(4 * n * 2, dtype=np.float64).reshape(4 * n, 2) * (r + 1))
    out["reducescatter"] = hvd.reducescatter(rows, op=hvd.Sum, name="rs").asnumpy().tolist()
    splits = mx.nd.array([r + 1] * n, dtype="int32")
    payload = mx.nd.array(np.repeat(np.arange(n), r + 1) * 100 + r, dtype="int64")
    received, received_splits = hvd.alltoall(payload, splits, name="a2a")
    out["alltoall"] = received.asnumpy().tolist()
    out["alltoall_splits"] = received_splits.asnumpy().tolist()
    grouped = hvd.grouped_allreduce([mx.nd.ones((2,)) * (r + 1), mx.nd.ones((3,)) * 10], op=hvd.Sum, name="g")
    out["grouped"] = [g.asnumpy().tolist() for g in grouped]
    out["objects"] = hvd.allgather_object({"rank": r, "tag": "x" * r})
    out["object"] = hvd.broadcast_object({"from": r} if r == n - 1 else None, root_rank=n - 1)
    # a Gluon layer whose weight shape is known only at the first forward: broadcast then, from rank 0
    mx.random.seed(7 + r)
    layer = mx.gluon.nn.Dense(3)
    layer.initialize()
    hvd.broadcast_parameters(layer.collect_params(), root_rank=0, prefix="deferred")
    layer(mx.nd.ones((2, 5)))
    out["deferred_weight"] = hashlib.sha256(layer.weight.data().asnumpy().tobytes()).hexdigest()
    try:
        hvd.allreduce(t, process_set=hvd.ProcessSet([0]))
        out["process_set"] = "accepted"
    except ValueError as error:
        out["process_set"] = str(error)
    out["capabilities"] = {"gloo": hvd.gloo_built(), "mpi": hvd.mpi_built(), "nccl": hvd.nccl_built(),
                           "ccl": hvd.ccl_built()}
    report(**out)


def process_sets_case():
    """4 ranks: sets {0,1}, {2,3} and {0,2}; every collective on a set against what its members hold; the set
    {2,3} finishes its allreduce while rank 0 sleeps before the matching one on {0,1}."""
    import time

    r = hvd.rank()
    low, high, even = hvd.add_process_set([0, 1]), hvd.add_process_set([2, 3]), hvd.add_process_set([0, 2])
    mine = low if r in (0, 1) else high
    out = {"set_rank": mine.rank(), "set_size": mine.size(), "in_even": even.included()}
    t = mx.nd.array(np.arange(4, dtype=np.float64) + 10 * r)
    if r == 0:
        time.sleep(5.0)
    started = time.time()
    out["sum"] = hvd.allreduce(t, op=hvd.Sum, process_set=mine, name="s").asnumpy().tolist()
    out["sum_seconds"] = time.time() - started
    out["finished_at"] = time.time()
    out["max"] = hvd.allreduce(t, op=hvd.Max, process_set=mine, name="m").asnumpy().tolist()
    out["gathered"] = hvd.allgather(mx.nd.array([[r, r]], dtype="int32"), process_set=mine, name="g").asnumpy().tolist()
    root = 3 if mine is high else 1
    out["broadcast"] = hvd.broadcast(mx.nd.array([r] * 3, dtype="int64"), root_rank=root, process_set=mine,
                                     name="b").asnumpy().tolist()
    out["reducescatter"] = hvd.reducescatter(mx.nd.array(np.ones((4, 2)) * (r + 1)), op=hvd.Sum, process_set=mine,
                                             name="rs").asnumpy().tolist()
    out["objects"] = hvd.allgather_object(r, process_set=mine)
    if even.included():
        out["even_average"] = hvd.allreduce(mx.nd.array([float(r)]), process_set=even, name="e").asnumpy().tolist()
    try:
        hvd.allreduce(t, process_set=even if not even.included() else high if r in (0, 1) else low, name="x")
        out["outsider"] = "accepted"
    except ValueError as error:
        out["outsider"] = str(error)
    hvd.remove_process_set(even)
    hvd.remove_process_set(high)
    hvd.remove_process_set(low)
    report(**out)


def basics_case():
    """2 ranks: Horovod's basics (queries before hvd.init(), then the numbers), the kit's refusals, and unnamed
    collectives on a set of rank 0 alone followed by unnamed collectives of the whole job."""
    import warnings

    out = {}
    try:
        hvd.size()
        out["before_init"] = "accepted"
    except ValueError as error:
        out["before_init"] = type(error).__name__
    out["gloo_enabled_before"] = hvd.gloo_enabled()
    hvd.init()
    r = hvd.rank()
    out["gloo_enabled"] = hvd.gloo_enabled()
    out["numbers"] = [hvd.size(), r, hvd.local_size(), hvd.local_rank(), hvd.cross_size(), hvd.cross_rank()]
    solo = hvd.add_process_set([0])
    out["solo"] = None
    if solo.included():
        out["solo"] = hvd.allreduce(mx.nd.ones((2,)), op=hvd.Sum, process_set=solo).asnumpy().tolist()
        hvd.allreduce(mx.nd.ones((2,)), process_set=solo)
    out["after_sets"] = hvd.allreduce(mx.nd.ones((2,)) * (r + 1), op=hvd.Sum).asnumpy().tolist()
    out["after_sets_named"] = hvd.allreduce(mx.nd.ones((2,)) * (r + 1), op=hvd.Sum, name="n").asnumpy().tolist()
    hvd.remove_process_set(solo)
    refused = {}
    calls = {"adasum": lambda: hvd.allreduce(mx.nd.ones((2,)), op=hvd.Adasum),
             "both": lambda: hvd.allreduce(mx.nd.ones((2,)), op=hvd.Sum, average=True),
             "mpi_threads_supported": hvd.mpi_threads_supported,
             "start_timeline": lambda: hvd.start_timeline("/tmp/never.json"),
             "root_outside": lambda: hvd.broadcast(mx.nd.ones((2,)), root_rank=2)}
    for what, call in sorted(calls.items()):
        try:
            call()
            refused[what] = "accepted"
        except Exception as error:  # noqa: BLE001 - the type is what the test checks
            refused[what] = type(error).__name__
    out["refused"] = refused
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hvd.allreduce(mx.nd.ones((2,)), average=False, name="deprecated")
    out["average_warns"] = ",".join(sorted({w.category.__name__ for w in caught}))
    # num_groups=3 over 4 gradients (the kit's split: [2, 1, 1]): each rank's own batch, so a gradient left out of
    # every group would leave the ranks' weights apart
    net = tiny_net(seed=1)
    trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, num_groups=3)
    x, y = data(r)
    with mx.autograd.record():
        loss = mx.gluon.loss.L2Loss()(net(x), y)
    loss.backward()
    trainer.step(x.shape[0])
    out["grouped_step"] = len(set(hvd.allgather_object(digest(net.collect_params()))))
    report(**out)

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
    if sys.argv[1] != "basics":  # it queries before hvd.init()
        hvd.init()
    {"gluon": gluon_case, "kvstore": kvstore_case, "module": module_case, "nancheck": nancheck_case,
     "optimizer": lambda: module_case(optimizer_api=True), "horovod_api": horovod_api_case,
     "process_sets": process_sets_case, "basics": basics_case}[sys.argv[1]]()
    hvd.shutdown()
