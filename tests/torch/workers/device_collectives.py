"""One rank of the CUDA-tensor checks (tests/torch/test_device_path.py, bench/gpu_device_check.py): every rank on
GPU 0 under the gloo backend; each collective on a CUDA tensor is compared with the same call on the host copy.
Prints `REPORT {json}`: per case, whether the device result equals the host result (bits) and the largest
difference. Needs no test infrastructure: it runs as it is on a lent GPU machine."""

import copy
import json
import os
import traceback

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
import perseus  # noqa: E402,F401  (DDP gets the perseus hook)
import perseus.torch.horovod as hvd  # noqa: E402
from perseus.torch import _device  # noqa: E402

hvd.init()
rank, size = hvd.rank(), hvd.size()
if os.environ.get("DEVICE_CHECK_SMOKE_ON_CPU") == "1":  # this script's own smoke run on a machine without a GPU
    dev = torch.device("cpu")
else:
    dev = torch.device("cuda", int(os.environ.get("DEVICE_CHECK_GPU", "0")))
    torch.cuda.set_device(dev)
cases = {}


def compare(name, on_device, on_host, exact=True, tolerance=1e-3):
    """exact: the same bits; else the largest difference within `tolerance` x the largest magnitude (at least 1)."""
    got, want = on_device.detach().cpu(), on_host.detach().cpu()
    diff = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
    same_bits = got.dtype == want.dtype and torch.equal(got, want)
    bound = tolerance * max(1.0, want.double().abs().max().item())
    cases[name] = {"equal": bool(same_bits if exact else diff <= bound), "max_difference": diff,
                   "device": str(on_device.device)}


def case(fn, name=None):  # runs the case where it is defined
    try:
        fn()
    except Exception as error:  # recorded; the check fails on it
        cases[name or fn.__name__] = {"equal": False, "error": "{}: {}".format(type(error).__name__, error),
                                      "trace": traceback.format_exc()[-1500:]}
    return fn


def values(n, dtype=torch.float32):
    return ((torch.arange(n, dtype=torch.float64) * 7919 + rank * 104729) % 20011 / 997.0 - 10.0).to(dtype)


@case
def allreduce_sum_fp32():
    x = values(100003)
    compare("allreduce_sum_fp32", hvd.allreduce(x.to(dev), op=hvd.Sum, name="d.sum"), hvd.allreduce(x, op=hvd.Sum, name="h.sum"))


@case
def allreduce_average_fp16():
    x = values(5000, torch.float16)
    compare("allreduce_average_fp16", hvd.allreduce(x.to(dev), name="d.avg16"), hvd.allreduce(x, name="h.avg16"))


@case
def allreduce_int64_and_bool():
    x = torch.arange(777, dtype=torch.int64) * (rank + 3)
    compare("allreduce_int64", hvd.allreduce(x.to(dev), op=hvd.Sum, name="d.i64"), hvd.allreduce(x, op=hvd.Sum, name="h.i64"))
    b = (torch.arange(64) % (rank + 2)) == 0
    compare("allreduce_bool", hvd.allreduce(b.to(dev), op=hvd.Sum, name="d.b"), hvd.allreduce(b, op=hvd.Sum, name="h.b"))


@case
def broadcast_from_last_rank():
    x = values(4099)
    on_dev = x.to(dev)
    hvd.broadcast_(on_dev, root_rank=size - 1, name="d.bc")
    hvd.broadcast_(x, root_rank=size - 1, name="h.bc")
    compare("broadcast_from_last_rank", on_dev, x)


@case
def deferred_across_a_barrier():
    """Named async collectives of CUDA tensors that rank 0 submits before a barrier and the others after it (they
    run once every rank has them, started from another call's exchange), and two submitted in different orders."""
    x, y = values(2049), values(513, torch.float16)
    on_dev = x.clone().to(dev)  # a copy on the CPU smoke run too (there .to() returns x itself)
    handle = hvd.allreduce_async_(on_dev, op=hvd.Sum, name="d.deferred") if rank == 0 else None
    hvd.barrier()
    if rank != 0:
        handle = hvd.allreduce_async_(on_dev, op=hvd.Sum, name="d.deferred")
    hvd.barrier()
    hvd.synchronize(handle)
    compare("deferred_allreduce", on_dev, hvd.allreduce(x, op=hvd.Sum, name="h.deferred"))
    order = [("d.first", x), ("d.second", y)]
    handles = {n: hvd.allreduce_async(t.to(dev), name=n) for n, t in (order if rank % 2 == 0 else order[::-1])}
    compare("reordered_allreduce", torch.cat([hvd.synchronize(handles[n]).double() for n, _ in order]),
            torch.cat([hvd.allreduce(t, name="h" + n[1:]).double() for n, t in order]))


@case
def the_other_collectives():
    """allgather (ranks' first dimensions differ where PERSEUS_CHANGE_HVD_ALLGATHER=1), grouped allreduce, reducescatter and alltoall of CUDA tensors
    equal the same calls on host tensors; each result stays on the device it came from."""
    from perseus import config
    concatenate = config.get().change_hvd_allgather  # PERSEUS_CHANGE_HVD_ALLGATHER=1: Horovod's concatenation
    rows_here = 3 + rank if concatenate else 3  # the default stacks equal shapes
    x = values(rows_here * 5).reshape(rows_here, 5)
    gathered = hvd.allgather(x.to(dev), name="d.gather")
    compare("allgather", gathered, hvd.allgather(x, name="h.gather"))
    a, b = values(1001), values(77, torch.float16)
    got = hvd.grouped_allreduce([a.to(dev), b.to(dev)], op=hvd.Sum, name="d.group")
    want = hvd.grouped_allreduce([a, b], op=hvd.Sum, name="h.group")
    compare("grouped_allreduce", torch.cat([g.double() for g in got]), torch.cat([w.double() for w in want]))
    m = values(size * 6 * 4).reshape(size * 6, 4)
    compare("reducescatter", hvd.reducescatter(m.to(dev), op=hvd.Sum, name="d.rs"),
            hvd.reducescatter(m, op=hvd.Sum, name="h.rs"))
    splits = torch.tensor([1 + (r + rank) % 3 for r in range(size)], dtype=torch.int32)
    t = values(int(splits.sum()) * 2).reshape(-1, 2)
    out, received = hvd.alltoall(t.to(dev), splits=splits, name="d.a2a")
    want_out, want_received = hvd.alltoall(t, splits=splits, name="h.a2a")
    compare("alltoall", out, want_out)
    placed = [gathered.device, got[0].device, out.device]
    cases["results_stay_on_the_device"] = {"equal": all(d == dev for d in placed) and torch.equal(received, want_received),
                                           "max_difference": 0.0, "device": str(placed)}


@case
def process_set_collectives():
    """CUDA tensors on registered process sets (each set runs an engine of its own): every rank as a set, and a
    set of the last rank alone."""
    every = hvd.add_process_set(list(range(size)))
    alone = hvd.add_process_set([size - 1])
    try:
        x = values(3001)
        compare("process_set_allreduce", hvd.allreduce(x.to(dev), op=hvd.Sum, name="d.ps", process_set=every),
                hvd.allreduce(x, op=hvd.Sum, name="h.ps", process_set=every))
        on_dev = x.to(dev)
        hvd.broadcast_(on_dev, root_rank=0, name="d.psbc", process_set=every)
        compare("process_set_broadcast", on_dev, hvd.broadcast(x, root_rank=0, name="h.psbc", process_set=every))
        if alone.included():
            compare("process_set_of_one", hvd.allreduce(x.to(dev), name="d.one", process_set=alone), x)
    finally:
        hvd.remove_process_set(alone)
        hvd.remove_process_set(every)


@case
def ddp_step_gradients():
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64))
    gpu = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(base).to(dev), device_ids=[dev.index] if dev.type == "cuda" else None)
    cpu = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(base))
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(32, 256, generator=g), torch.randn(32, 64, generator=g)
    for model, inputs in ((gpu, (x.to(dev), y.to(dev))), (cpu, (x, y))):
        torch.nn.functional.mse_loss(model(inputs[0]), inputs[1]).backward()
    got = torch.cat([p.grad.reshape(-1) for p in gpu.parameters()])
    want = torch.cat([p.grad.reshape(-1) for p in cpu.parameters()])
    # the same fp16 wire on both paths (the core's CUDA kernels are bit-equal to its CPU ones); the local
    # gradients themselves come from cuBLAS vs CPU BLAS, so they are compared with a tolerance
    compare("ddp_step_gradients", got, want, exact=False)


@case
def distributed_optimizer_step():
    torch.manual_seed(1)
    model = torch.nn.Linear(128, 32).to(dev)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters())
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(16, 128, generator=g).to(dev)
    model(x).pow(2).mean().backward()
    local = model.weight.grad.detach().clone()
    opt.synchronize()
    reduced = model.weight.grad.detach().clone()
    everyone = hvd.allgather(local.cpu().unsqueeze(0), name="h.local").mean(0)
    compare("distributed_optimizer_step", reduced, everyone, exact=False)


def ddp_against_the_local_average(name, dtype=torch.float32, tolerance=1e-3, autocast=False, compiled=False,
                                  **ddp_options):
    """A DDP step on the GPU under perseus against the average of every rank's gradient of an unwrapped copy."""
    torch.manual_seed(3)
    base = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64)).to(dev, dtype)
    plain = copy.deepcopy(base)
    model = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(base), device_ids=[dev.index] if dev.index is not None
                                                      else None, **ddp_options)
    if compiled:
        model = torch.compile(model)
    g = torch.Generator().manual_seed(10 + rank)
    x = torch.randn(32, 256, generator=g).to(dev, dtype)
    for net in (model, plain):
        with torch.autocast("cuda", dtype=torch.float16, enabled=autocast):
            net(x).float().pow(2).mean().backward()
    got = torch.cat([p.grad.reshape(-1).float() for p in model.parameters()])
    local = torch.cat([p.grad.reshape(-1).float() for p in plain.parameters()])
    want = hvd.allgather(local.cpu().unsqueeze(0), name="h.local." + name).mean(0)
    compare(name, got, want, exact=False, tolerance=tolerance)


for variant, options in (
        ("ddp_fp16_gradients", dict(dtype=torch.float16, tolerance=1e-2)),
        ("ddp_bf16_gradients", dict(dtype=torch.bfloat16, tolerance=2e-2)),
        ("ddp_autocast_fp16", dict(autocast=True)),
        ("ddp_without_bucket_views", dict(gradient_as_bucket_view=False)),
        ("ddp_torch_compile", dict(compiled=True))):
    if dev.type == "cuda" or not (options.get("autocast") or options.get("compiled")):  # the CPU smoke run
        case(lambda: ddp_against_the_local_average(variant, **options), name=variant)


cases_ok = all(c.get("equal") for c in cases.values())
print("REPORT " + json.dumps({"rank": rank, "size": size, "ok": cases_ok, "cases": cases,
                              "device_report": {k: _device.report()[k] for k in ("built", "cuda_kernels", "nccl_version",
                                                                                  "cuda_library", "nccl_library")}}),
      flush=True)
dist.barrier()
