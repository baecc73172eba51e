"""Results of perseus.torch.horovod that were silently wrong once: each case returns what every
rank saw; tests/torch/test_hvd_semantics.py compares with Horovod's semantics."""

import os
import sys
import time

import torch

import perseus.torch.horovod as hvd
from hvd_cases import check, results
from worker_common import emit

hvd.init()
r, n = hvd.rank(), hvd.size()


def rows(t):
    return t.detach().to(torch.float64).reshape(-1).tolist()


for dtype in (torch.int8, torch.int16, torch.uint8, torch.int32, torch.bool, torch.float16):
    @check("broadcast_{}".format(str(dtype).replace("torch.", "")))
    def _(dtype=dtype):
        base = torch.arange(1, 13).reshape(4, 3) % 2 if dtype == torch.bool else torch.arange(1, 13).reshape(4, 3)
        mine = (base * (1 if r == 0 else 0)).to(dtype)  # non-root ranks start from zeros
        out = hvd.broadcast(mine, root_rank=0)
        inplace = mine.clone()
        hvd.broadcast_(inplace, root_rank=0)
        return {"out": rows(out), "inplace": rows(inplace), "expected": rows(base.to(dtype))}


@check("grad_allreduce")
def _():
    got = {}
    for label, op in (("sum", hvd.Sum), ("average", hvd.Average)):
        x = torch.ones(3, requires_grad=True)
        hvd.allreduce(x * (r + 1), op=op, name="grad." + label).sum().backward()
        got[label] = rows(x.grad)
    return got


@check("grad_broadcast")
def _():
    x = torch.ones(3, requires_grad=True)
    hvd.broadcast(x * 2.0, root_rank=0, name="grad.broadcast").sum().backward()
    return rows(x.grad)


@check("grad_allgather")
def _():
    x = torch.full((2, 3), float(r + 1), requires_grad=True)
    out = hvd.allgather(x, name="grad.allgather")
    weights = torch.arange(out.numel(), dtype=torch.float32).reshape(out.shape)
    (out * weights).sum().backward()
    return {"has_grad_fn": out.grad_fn is not None, "grad": rows(x.grad), "shape": list(out.shape)}


@check("allgather_per_rank_sizes")
def _():
    return rows(hvd.allgather(torch.ones(r + 1, 2), name="sizes.by.rank"))


@check("prescale_integer")
def _():
    t = torch.tensor([7, -7, 3, 100], dtype=torch.int32)
    out = hvd.allreduce(t, op=hvd.Sum, prescale_factor=0.5, name="prescale.int")
    return {"out": rows(out), "dtype": str(out.dtype)}


@check("postscale_integer")
def _():
    t = torch.tensor([7, -7, 3, 100], dtype=torch.int64)
    out = hvd.allreduce(t, op=hvd.Sum, postscale_factor=0.3, name="postscale.int")
    return {"out": rows(out), "dtype": str(out.dtype)}


@check("allgather_async_pending_at_submit")
def _():
    big = torch.full((8 * 1024 * 1024,), float(r))  # 32 MB per rank: the gather cannot be done at submit
    handle = hvd.allgather_async(big, name="async.gather")
    pending = not hvd.poll(handle)
    out = hvd.synchronize(handle)
    flat = out.reshape(-1)
    return {"pending_at_submit": pending, "ends": [flat[0].item(), flat[-1].item()], "numel": out.numel()}


@check("allreduce_async_pending_at_submit")
def _():
    big = torch.ones(8 * 1024 * 1024)
    handle = hvd.allreduce_async(big, op=hvd.Sum, name="async.reduce")
    pending = not hvd.poll(handle)
    return {"pending_at_submit": pending, "first": hvd.synchronize(handle)[0].item()}


@check("sparse_gradients")
def _():
    """DistributedOptimizer with an embedding's sparse gradient: averaged as Horovod does (sparse allreduce,
    or dense and back to sparse with sparse_as_dense=True); returns the dense averaged gradient."""
    got = {}
    for as_dense in (False, True):
        torch.manual_seed(0)
        table = torch.nn.Embedding(6, 2, sparse=True)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(table.parameters(), lr=0.0),
                                       named_parameters=[("table.{}".format(as_dense), table.weight)],
                                       sparse_as_dense=as_dense)
        rows_used = torch.tensor([0, 1, 1]) if r == 0 else torch.tensor([1, 5])
        (table(rows_used) * (r + 1)).sum().backward()
        opt.step()
        got[str(as_dense)] = {"is_sparse": table.weight.grad.is_sparse, "grad": rows(table.weight.grad.to_dense())}
    return got


def _join_then(kind):
    """Rank 0 joins; every other rank calls `kind`, which must raise (Horovod), then joins too."""
    tensor = torch.ones(4, 3)
    if r == 0:
        return {"raised": None, "join_returned": hvd.join()}
    try:
        if kind == "allgather":
            hvd.allgather(tensor, name="joined.allgather")
        else:
            hvd.broadcast(tensor, root_rank=r, name="joined.broadcast")
        raised = None
    except RuntimeError as error:
        raised = type(error).__name__ + ": " + str(error)
    return {"raised": raised, "join_returned": hvd.join()}


@check("join_allgather")
def _():
    return _join_then("allgather")


@check("join_broadcast")
def _():
    return _join_then("broadcast")


@check("after_join_collectives_work")
def _():
    return rows(hvd.allreduce(torch.ones(2), op=hvd.Sum, name="after.join"))


emit(results)
hvd.shutdown()
