"""Every Horovod API call of perseus.torch.horovod on a real multi-process job; records what each returned."""

import os
import traceback

import torch

import perseus.torch.horovod as hvd
from perseus import config as perseus_config
from worker_common import emit

results = {}


def check(name):
    def wrap(fn):
        try:
            results[name] = {"ok": True, "value": fn()}
        except Exception as error:  # recorded; the test decides whether an error was expected
            results[name] = {"ok": False, "error": "{}: {}".format(type(error).__name__, error),
                             "trace": traceback.format_exc()}
        return fn
    return wrap


def as_list(t):
    return t.detach().double().reshape(-1).tolist() if torch.is_tensor(t) else t


try:
    hvd.rank()
    results["before_init"] = {"ok": True}
except ValueError as error:
    results["before_init"] = {"ok": False, "error": str(error)}

hvd.init()
r, n = hvd.rank(), hvd.size()


@check("identity")
def _():
    return {"rank": r, "size": n, "local_rank": hvd.local_rank(), "local_size": hvd.local_size(),
            "cross_rank": hvd.cross_rank(), "cross_size": hvd.cross_size(), "is_initialized": hvd.is_initialized(),
            "gloo_built": hvd.gloo_built(), "mpi_built": hvd.mpi_built(), "nccl_built": hvd.nccl_built(),
            "gloo_enabled": hvd.gloo_enabled(), "mpi_enabled": hvd.mpi_enabled()}


@check("allreduce_average")
def _():
    t = torch.tensor([1.0, 2.0, 3.0]) * (r + 1)
    out = hvd.allreduce(t, name="avg")
    return {"out": as_list(out), "input_untouched": as_list(t)}


@check("allreduce_sum")
def _():
    return as_list(hvd.allreduce(torch.full((2, 2), float(r + 1)), op=hvd.Sum, name="sum"))


@check("allreduce_average_flag_false")
def _():
    return as_list(hvd.allreduce(torch.tensor([float(r)]), average=False))


@check("allreduce_min_max_product")
def _():
    t = torch.tensor([float(r + 2)])
    return [as_list(hvd.allreduce(t, op=op)) for op in (hvd.Min, hvd.Max, hvd.Product)]


@check("allreduce_inplace")
def _():
    t = torch.tensor([float(r), 10.0])
    same = hvd.allreduce_(t, op=hvd.Sum, name="inplace")
    return {"out": as_list(t), "returns_same_object": same is t}


@check("allreduce_int")
def _():
    return as_list(hvd.allreduce(torch.tensor([r + 1, 5], dtype=torch.int64), op=hvd.Sum))


@check("allreduce_fp16_compression")
def _():
    t = torch.tensor([0.1, 1000.5, -3.25]) * (r + 1)
    out = hvd.allreduce(t, compression=hvd.Compression.fp16, op=hvd.Sum)
    return {"out": as_list(out), "dtype": str(out.dtype)}


@check("allreduce_prescale_postscale")
def _():
    return as_list(hvd.allreduce(torch.tensor([float(r + 1)]), op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5))


@check("allreduce_adasum")
def _():
    t = torch.tensor([1.0, 0.0]) if r == 0 else torch.tensor([1.0, 1.0])
    return as_list(hvd.allreduce(t, op=hvd.Adasum, name="adasum"))


@check("allreduce_shape_mismatch")
def _():
    hvd.allreduce(torch.zeros(2 + r, 3), name="grad.weight")


@check("allreduce_dtype_mismatch")
def _():
    hvd.allreduce(torch.zeros(2, dtype=torch.float32 if r == 0 else torch.float64), name="mixed")


@check("allreduce_after_mismatch_still_works")
def _():
    return as_list(hvd.allreduce(torch.tensor([float(r)]), op=hvd.Sum, name="after"))


@check("async_allreduce_poll_synchronize")
def _():
    a = torch.tensor([float(r + 1)])
    h1 = hvd.allreduce_async(a, name="async.a", op=hvd.Sum)
    b = torch.tensor([2.0 * (r + 1)])
    h2 = hvd.allreduce_async_(b, name="async.b")
    polled = hvd.poll(h1)
    out1 = hvd.synchronize(h1)
    hvd.synchronize(h2)
    while not isinstance(polled, bool):
        pass
    try:
        hvd.synchronize(h1)
        twice = "no error"
    except ValueError as error:
        twice = str(error)
    return {"out1": as_list(out1), "b_in_place": as_list(b), "poll_type": type(polled).__name__, "twice": twice}


@check("allgather_stack_default")
def _():
    return {"out": hvd.allgather(torch.full((2,), float(r)), name="gather.stack").tolist()}


@check("allgather_stack_shape_mismatch")
def _():
    hvd.allgather(torch.zeros(1 + r), name="gather.bad")


@check("allgather_concat")
def _():
    os.environ["PERSEUS_CHANGE_HVD_ALLGATHER"] = "1"
    perseus_config.reload()
    try:
        same = hvd.allgather(torch.full((2,), float(r)), name="gather.cat").tolist()
        ragged = hvd.allgather(torch.full((r + 1, 2), float(r)), name="gather.ragged").tolist()
        h = hvd.allgather_async(torch.tensor([r]), name="gather.async")
        async_out = hvd.synchronize(h).tolist()
        return {"same": same, "ragged": ragged, "async": async_out}
    finally:
        del os.environ["PERSEUS_CHANGE_HVD_ALLGATHER"]
        perseus_config.reload()


@check("broadcast")
def _():
    t = torch.arange(4.0) + 100 * r
    out = hvd.broadcast(t, root_rank=1, name="bcast")
    return {"out": as_list(out), "input_untouched": as_list(t)}


@check("broadcast_inplace_and_async")
def _():
    t = torch.full((3,), float(r))
    hvd.broadcast_(t, root_rank=0)
    u = torch.full((2,), float(r) + 7)
    h = hvd.broadcast_async_(u, root_rank=n - 1)
    hvd.synchronize(h)
    v = hvd.synchronize(hvd.broadcast_async(torch.tensor([float(r)]), root_rank=1))
    return {"t": as_list(t), "u": as_list(u), "v": as_list(v)}


@check("broadcast_root_mismatch")
def _():
    hvd.broadcast(torch.zeros(1), root_rank=r, name="bad.root")


@check("broadcast_parameters")
def _():
    torch.manual_seed(100 + r)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2).double())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    flat = torch.cat([t.double().reshape(-1) for t in model.state_dict().values()])
    torch.manual_seed(100)
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2).double())
    expected = torch.cat([t.double().reshape(-1) for t in reference.state_dict().values()])
    model2 = torch.nn.Linear(2, 2)
    with torch.no_grad():
        model2.weight.fill_(r)
    hvd.broadcast_parameters(model2.named_parameters(), root_rank=1)
    return {"equal_root": bool(torch.equal(flat, expected)), "named_params": as_list(model2.weight)}


@check("broadcast_parameters_mismatch")
def _():
    model = torch.nn.Linear(3, 3 + r)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)


@check("broadcast_optimizer_state")
def _():
    torch.manual_seed(7)
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * (r + 1), momentum=0.9)
    model(torch.randn(4, 3) * (r + 1)).sum().backward()
    opt.step()
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    buf = opt.state[model.weight]["momentum_buffer"]
    return {"lr": opt.param_groups[0]["lr"], "momentum_buffer": as_list(buf)}


@check("broadcast_object")
def _():
    obj = {"rank": r, "tensor": torch.tensor([r, r])} if r == 1 else None
    got = hvd.broadcast_object(obj, root_rank=1)
    return {"rank": got["rank"], "tensor": got["tensor"].tolist()}


@check("allgather_object")
def _():
    return hvd.allgather_object({"r": r, "text": "x" * (r + 1)})


@check("barrier")
def _():
    hvd.barrier()
    return True


@check("sync_batch_norm")
def _():
    torch.manual_seed(0)
    full = torch.randn(8, 3, 5, dtype=torch.float64)
    mine = full[r * 4: (r + 1) * 4].clone().requires_grad_(True)
    sbn = hvd.SyncBatchNorm(3).double()
    with torch.no_grad():
        sbn.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
        sbn.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    out = sbn(mine)
    (out * torch.arange(out.numel(), dtype=torch.float64).reshape(out.shape)).sum().backward()
    ref = torch.nn.BatchNorm1d(3).double()
    with torch.no_grad():
        ref.weight.copy_(sbn.weight)
        ref.bias.copy_(sbn.bias)
    whole = full.clone().requires_grad_(True)
    ref_out = ref(whole)
    weights = torch.cat([torch.arange(out.numel(), dtype=torch.float64).reshape(out.shape)] * 2)
    (ref_out * weights).sum().backward()
    return {
        "out_err": float((out - ref_out[r * 4: (r + 1) * 4]).abs().max()),
        "grad_err": float((mine.grad - whole.grad[r * 4: (r + 1) * 4]).abs().max()),
        "running_mean_err": float((sbn.running_mean - ref.running_mean).abs().max()),
        "running_var_err": float((sbn.running_var - ref.running_var).abs().max()),
    }


@check("join")
def _():
    outs = []
    if r == 0:
        outs.append(as_list(hvd.allreduce(torch.tensor([4.0, 8.0]), name="join.avg")))
        outs.append(as_list(hvd.allreduce(torch.tensor([1.0]), op=hvd.Sum, name="join.sum")))
        try:  # Horovod refuses a broadcast while a rank has joined
            hvd.broadcast(torch.tensor([5.0, 6.0]), root_rank=0, name="join.bcast")
            outs.append("broadcast ran")
        except hvd.HorovodInternalError as error:
            outs.append(type(error).__name__)
    last = hvd.join()
    return {"outs": outs, "last": last}


@check("adasum_size_check")
def _():
    return hvd.size() & (hvd.size() - 1) == 0


hvd.shutdown()
results["after_shutdown_is_initialized"] = {"ok": True, "value": hvd.is_initialized()}
emit(results)
