"""hvd.DistributedOptimizer cases in one job; each case sets its PERSEUS_* variables (config reload) first."""

import os
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

import recording_backend as rec
from worker_common import emit

RANK, SIZE = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])

rec.init(RANK, SIZE)  # hvd.init() then reuses this default group; perseus's engine counts its own wire bytes
import perseus.torch.horovod as hvd  # noqa: E402
from perseus import config  # noqa: E402
from perseus.torch import _comm  # noqa: E402

hvd.init()


def configure(**variables):
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)
    config.reload()


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def batch(step, rank=RANK):
    g = torch.Generator().manual_seed(100 * step + rank)
    return torch.randn(6, 8, generator=g), torch.randint(0, 4, (6,), generator=g)


def flat(m):
    return torch.cat([p.detach().reshape(-1) for p in m.parameters()])


def reference(steps, passes=1, accumulate=1, op_sum=False):
    """Exact reference: every rank's batches computed here, gradients averaged (or summed) in float64."""
    net = model().double()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        if step % accumulate == 0:
            total = [torch.zeros_like(p) for p in net.parameters()]
        for r in range(SIZE):
            net.zero_grad()
            for k in range(passes):
                x, y = batch(step * passes + k, r)
                F.cross_entropy(net(x.double()), y).backward()
            for t, p in zip(total, net.parameters()):
                t += p.grad
        if step % accumulate == accumulate - 1:
            for t, p in zip(total, net.parameters()):
                p.grad = t if op_sum else t / SIZE
            opt.step()
    return flat(net).float()


def train(opt_kwargs, steps, passes=1):
    net = model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=net.named_parameters(), **opt_kwargs)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    world = _comm.current()
    before = world.wire("all")
    for step in range(steps):
        opt.zero_grad()
        for k in range(passes):
            x, y = batch(step * passes + k)
            F.cross_entropy(net(x), y).backward()
        opt.step()
    wire = {}
    for dtype, (nbytes, calls) in world.wire("all").items():
        b0, c0 = before.get(dtype, (0, 0))
        if calls - c0:
            wire[dtype] = [calls - c0, nbytes - b0]
    numel = sum(p.numel() for p in net.parameters())
    return net, opt, {"wire": wire, "numel": numel, "tensors": len(list(net.parameters()))}


results = {}


def case(name, **variables):
    def wrap(fn):
        configure(**variables)
        try:
            results[name] = {"ok": True, "value": fn()}
        except Exception as error:
            results[name] = {"ok": False, "error": "{}: {}".format(type(error).__name__, error),
                             "trace": traceback.format_exc()}
        configure(**{k: None for k in variables})
        return fn
    return wrap


def close(net, ref):
    return float((flat(net) - ref).abs().max())


@case("average_default_fp16")
def _():
    net, _, seen = train({}, 6)
    return dict(seen, diff=close(net, reference(6)))


@case("compression_table_dtype1_none", PERSEUS_ALLREDUCE_DTYPE="1")
def _():
    net, _, seen = train({"compression": hvd.Compression.none}, 3)
    return dict(seen, diff=close(net, reference(3)))


@case("compression_table_dtype1_fp16", PERSEUS_ALLREDUCE_DTYPE="1")
def _():
    net, _, seen = train({"compression": hvd.Compression.fp16}, 3)
    return dict(seen, diff=close(net, reference(3)))


@case("compression_table_dtype2_single_node", PERSEUS_ALLREDUCE_DTYPE="2")
def _():
    net, _, seen = train({}, 3)
    return seen


@case("op_sum")
def _():
    net, _, seen = train({"op": hvd.Sum}, 3)
    return dict(seen, diff=close(net, reference(3, op_sum=True)))


@case("backward_passes_per_step")
def _():
    net, _, seen = train({"backward_passes_per_step": 2}, 3, passes=2)
    return dict(seen, diff=close(net, reference(3, passes=2)))


@case("accumulate_n_steps", PERSEUS_ACCUMULATE_N_STEPS="2")
def _():
    net, _, seen = train({}, 6)
    return dict(seen, diff=close(net, reference(6, accumulate=2)))


@case("adasum")
def _():
    net, _, seen = train({"op": hvd.Adasum}, 2)
    return dict(seen, finite=bool(torch.isfinite(flat(net)).all()))


def nancheck_case():
    net = model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), named_parameters=net.named_parameters())
    if RANK == 1:
        net[2].bias.register_hook(lambda g: g * float("inf"))
    x, y = batch(0)
    F.cross_entropy(net(x), y).backward()
    try:
        opt.step()
    except Exception as error:
        return {"raised": True, "message": str(error)}
    return {"raised": False}


# under the declared name and under every alias perseus.config declares (the manual's PERSEUS_ALLREDUCE_NANHECK)
_nancheck = config.spec_of("PERSEUS_ALLREDUCE_NANCHECK")
for _spelling in (_nancheck.name,) + tuple(_nancheck.aliases):
    case("nancheck:" + _spelling, **{_spelling: "1"})(nancheck_case)


@case("zero_grad_before_step")
def _():
    net = model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), named_parameters=net.named_parameters())
    x, y = batch(0)
    F.cross_entropy(net(x), y).backward()
    try:
        opt.zero_grad()
        message = None
    except AssertionError as error:
        message = str(error)
    opt.step()
    return message


@case("synchronize_then_clip")
def _():
    net = model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), named_parameters=net.named_parameters())
    x, y = batch(0)
    F.cross_entropy(net(x), y).backward()
    opt.synchronize()
    averaged = [p.grad.clone() for p in net.parameters()]
    torch.nn.utils.clip_grad_norm_(net.parameters(), 0.01)
    with opt.skip_synchronize():
        opt.step()
    ref = model()
    for r in range(SIZE):
        xr, yr = batch(0, r)
        F.cross_entropy(ref(xr), yr).backward()
    expected = [p.grad / SIZE for p in ref.parameters()]
    return max(float((a - e).abs().max()) for a, e in zip(averaged, expected))


@case("custom_compressor_rejected")
def _():
    class Mine(hvd.Compressor):
        pass
    net = model()
    try:
        hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), named_parameters=net.named_parameters(),
                                 compression=Mine)
    except ValueError as error:
        return str(error)
    return None


@case("unnamed_parameters_rejected")
def _():
    net = model()
    try:
        hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                 named_parameters=list(net.named_parameters())[:2])
    except ValueError as error:
        return str(error)
    return None


@case("join_with_optimizer")
def _():
    net = model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=1.0), named_parameters=net.named_parameters())
    before = flat(net).clone()
    if RANK == 0:  # rank 1 has no data: it joins at once, rank 0 runs one step
        x, y = batch(0)
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
    last = hvd.join()
    own = model()
    x, y = batch(0, 0)
    F.cross_entropy(own(x), y).backward()
    expected = before - torch.cat([p.grad.reshape(-1) for p in own.parameters()]) / SIZE
    return {"last": last, "diff": float((flat(net) - expected).abs().max()) if RANK == 0 else None}


hvd.shutdown()
emit(results)
