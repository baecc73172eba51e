"""reducescatter, alltoall, the grouped collectives and sparse_allreduce_async on a real job: each case returns
what this rank got; tests/torch/test_hvd_more_collectives.py compares with Horovod's definitions."""

import torch

import perseus.torch.horovod as hvd
from hvd_cases import check, results
from worker_common import emit

hvd.init()
r, n = hvd.rank(), hvd.size()


def rows(t):
    return t.detach().to(torch.float64).reshape(-1).tolist()


@check("reducescatter")
def _():
    t = torch.arange(10, dtype=torch.float32).reshape(5, 2) * (r + 1)  # 5 rows over 2 ranks: 3 and 2
    out = {"sum": rows(hvd.reducescatter(t, op=hvd.Sum)), "average": rows(hvd.reducescatter(t)),
           "int_prescale": rows(hvd.reducescatter(torch.tensor([[3], [5]], dtype=torch.int32), op=hvd.Sum,
                                                  prescale_factor=0.5))}
    handle = hvd.reducescatter_async(t, op=hvd.Sum, name="rs.async")
    out["async"] = rows(hvd.synchronize(handle))
    out["grouped"] = [rows(x) for x in hvd.grouped_reducescatter([t, t[:2]], op=hvd.Sum)]
    x = torch.ones(4, 2, requires_grad=True)
    hvd.reducescatter(x, op=hvd.Sum).sum().backward()
    out["grad"] = rows(x.grad)
    return out


@check("alltoall")
def _():
    t = torch.arange(4, dtype=torch.float32) + 10 * r  # rank 0: 0..3, rank 1: 10..13
    equal = hvd.alltoall(t)
    splits = [1, 3] if r == 0 else [2, 2]
    uneven, received = hvd.alltoall(t, splits=splits)
    x = torch.ones(4, requires_grad=True)
    (hvd.alltoall(x * (r + 1)) * torch.arange(1.0, 5.0)).sum().backward()
    return {"equal": rows(equal), "uneven": rows(uneven), "received": received.tolist(),
            "received_dtype": str(received.dtype), "grad": rows(x.grad)}


@check("grouped_allreduce")
def _():
    a, b = torch.ones(3) * (r + 1), torch.full((2, 2), 2.0 * (r + 1))
    out = hvd.grouped_allreduce([a, b], op=hvd.Sum)
    inplace = [a.clone(), b.clone()]
    hvd.grouped_allreduce_(inplace, op=hvd.Average)
    handle = hvd.grouped_allreduce_async([a, b], op=hvd.Sum)
    x = torch.ones(2, requires_grad=True)
    sum(t.sum() for t in hvd.grouped_allreduce([x, x * 2], op=hvd.Sum)).backward()
    return {"out": [rows(t) for t in out], "inplace": [rows(t) for t in inplace],
            "async": [rows(t) for t in hvd.synchronize(handle)], "grad": rows(x.grad)}


@check("grouped_allgather")
def _():
    got = hvd.grouped_allgather([torch.full((1, 2), float(r)), torch.full((2,), float(r + 5))])
    return [rows(t) for t in got]


@check("sparse_allreduce")
def _():
    dense = torch.zeros(4, 2)
    dense[r] = r + 1.0
    dense[3] = 1.0
    summed = hvd.sparse_allreduce_async(dense.to_sparse(), name="sparse.sum", op=hvd.Sum)()
    averaged = hvd.sparse_allreduce_async(dense.to_sparse(), name="sparse.avg", op=hvd.Average)()
    return {"sum": rows(summed.to_dense()), "average": rows(averaged.to_dense()), "is_sparse": summed.is_sparse}


emit(results)
hvd.shutdown()
