"""Horovod's MXNet collectives on the perseus engine, with Horovod 0.28's signatures: allreduce(_), grouped_allreduce(_),
allgather, grouped_allgather, broadcast(_), alltoall, reducescatter, grouped_reducescatter.

NDArrays are copied to the host and reduced by the engine. These calls are exact, as Horovod's are: float32
travels as float64 (the sum of fp32 values rounded once), never through the engine's fp16 gradient wire policy,
which only the gradient path of DistributedTrainer / DistributedOptimizer uses (_gradient_allreduce_). Min, Max
and Product are an allgather and a local reduction; reducescatter is an allreduce of which each rank keeps its
rows; alltoall is an allgather of every rank's tensor and splits (size times the bytes of a true alltoall).
Every rank must call the same collectives; unnamed ones are named by their kind and call count, so they must be
called in the same order on every rank (as in Horovod).
"""
from typing import Any, List, Optional, Sequence

import numpy as np

from perseus.horovod_kit import ops as _ops
from perseus.horovod_kit.errors import NotSupportedByPerseus
from perseus.horovod_kit.naming import Namer
from perseus.horovod_kit.ops import OP_NAMES, Adasum, Average, Max, Min, Product, Sum, split_sizes

from . import _world
from .process_sets import Group, global_process_set

_FLOATS = ("float16", "float32", "float64")
_ENGINE_DTYPES = _FLOATS + ("int32", "int64", "uint8")
_WIDENED = {"float32": "float64", "int8": "int32"}  # exact sums; int8 has no engine dtype
# Horovod's MXNet names: a given name qualified by the kind ("allreduce.<name>"); a process set counts its own
_namer = Namer(qualify_given=True)


def _name(kind, name, group):
    # type: (str, Optional[str], Group) -> str
    return _namer.name(kind, name, group.scope)


def _group_names(kind, name, count, group):
    # type: (str, Optional[str], int, Group) -> List[str]
    return _namer.names(kind, name, count, group.scope)


def _reduction(op, average):
    # type: (Optional[int], Optional[bool]) -> int
    """The kit's rule (op=, or the deprecated average=; neither: Average); Adasum is not offered here."""
    op = _ops.resolve_op(op, average)
    if op == Adasum:
        raise NotSupportedByPerseus("not supported: op=hvd.Adasum in perseus.mxnet (use hvd.Average or hvd.Sum)")
    return op


def to_host(tensor, allowed=_ENGINE_DTYPES + ("int8",)):
    # type: (Any, Sequence[str]) -> np.ndarray
    host = tensor.asnumpy()  # a fresh C-contiguous copy; a 0-d NDArray stays 0-d (np.ascontiguousarray would not)
    if not host.flags.c_contiguous:
        host = host.copy(order="C")
    if host.dtype.name not in allowed:
        raise TypeError("perseus.mxnet: dtype %s is not supported here (one of %s)" % (host.dtype.name, ", ".join(allowed)))
    return host


def from_host(host, like):
    # type: (np.ndarray, Any) -> Any
    import mxnet as mx

    return mx.nd.array(host, ctx=like.context, dtype=host.dtype)


def assign(tensor, host):
    # type: (Any, np.ndarray) -> Any
    """`tensor` takes the host array's values, through the engine's copy: `tensor[:] = host` cannot write an
    NDArray in an MKLDNN layout (a hybridized convolution's weights after a forward pass)."""
    from_host(host, tensor).copyto(tensor)
    return tensor


def _math_dtype(dtype):
    # type: (np.dtype) -> Any
    """The dtype a tensor's scaling and averaging run in (the kit's rule; NDArrays are scaled on the host)."""
    kind = _ops.scale_kind(dtype.name not in _FLOATS, dtype.name == "float16", on_host=True)
    return {_ops.SCALE_IN_FLOAT64: np.float64, _ops.SCALE_IN_FLOAT32: np.float32}.get(kind, dtype.type)


def scale(host, factor):
    # type: (np.ndarray, float) -> np.ndarray
    """Horovod's pre/post scaling: integers in float64 then cast back (toward zero), float16 in float32."""
    if factor == 1.0:
        return host
    math = _math_dtype(host.dtype)
    return (host.astype(math) * math(factor)).astype(host.dtype)


def _sum_host(host, name, group):
    # type: (np.ndarray, str, Group) -> np.ndarray
    wide = _WIDENED.get(host.dtype.name)
    wire = host.astype(wide) if wide else host.copy()
    # the engine checks that every rank's shape agrees: a 0-d array goes as (1,), every other as it is
    group.engine.allreduce(name, wire if wire.ndim else wire.reshape(1), op="sum", dtype=wire.dtype.name)
    return wire.astype(host.dtype) if wide else wire


def _divide(host, count):
    # type: (np.ndarray, int) -> np.ndarray
    """Average's division, exact as Horovod's: in the scaling dtype, integers cast back toward zero."""
    math = _math_dtype(host.dtype)
    return (host.astype(math) / math(count)).astype(host.dtype)


def reduce_host(host, op, name, prescale_factor, postscale_factor, group):
    # type: (np.ndarray, int, str, float, float, Group) -> np.ndarray
    """A new host array: `op` over the group's ranks of `host` (Horovod's semantics, exact)."""
    host = scale(host, prescale_factor)
    if op in (Sum, Average):
        out = _sum_host(host, name, group)
        if op == Average:
            out = _divide(out, group.size)
    else:
        rows = allgather_host(host.reshape((1,) + host.shape), name, group).reshape((-1,) + host.shape)
        out = {Min: rows.min(axis=0), Max: rows.max(axis=0), Product: rows.prod(axis=0)}[op].astype(host.dtype)
    return scale(np.asarray(out).reshape(host.shape), postscale_factor)


def _allreduce_host(tensor, average, name, prescale_factor, postscale_factor, process_set, op):
    # type: (Any, Optional[bool], Optional[str], float, float, Any, Optional[int]) -> np.ndarray
    host, reduction = to_host(tensor), _reduction(op, average)
    group = Group(process_set, "hvd.allreduce")
    return reduce_host(host, reduction, _name("allreduce", name, group), prescale_factor, postscale_factor, group)


def allreduce(tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set, op=None):
    # type: (Any, Optional[bool], Optional[str], int, float, float, Any, Optional[int]) -> Any
    """A new NDArray: `op` (default Average) of `tensor` over all ranks."""
    return from_host(_allreduce_host(tensor, average, name, prescale_factor, postscale_factor, process_set, op),
                     tensor)


def allreduce_(tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set, op=None):
    # type: (Any, Optional[bool], Optional[str], int, float, float, Any, Optional[int]) -> Any
    """In place: `tensor` becomes `op` (default Average) over all ranks; returns it."""
    return assign(tensor, _allreduce_host(tensor, average, name, prescale_factor, postscale_factor, process_set, op))


def _grouped_allreduce_hosts(tensors, average, name, prescale_factor, postscale_factor, process_set, op):
    # type: (Sequence[Any], Optional[bool], Optional[str], float, float, Any, Optional[int]) -> List[np.ndarray]
    reduction, group = _reduction(op, average), Group(process_set, "hvd.grouped_allreduce")
    return [reduce_host(to_host(t), reduction, n, prescale_factor, postscale_factor, group)
            for t, n in zip(tensors, _group_names("grouped_allreduce", name, len(tensors), group))]


def grouped_allreduce(tensors, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set, op=None):
    # type: (Sequence[Any], Optional[bool], Optional[str], int, float, float, Any, Optional[int]) -> List[Any]
    hosts = _grouped_allreduce_hosts(tensors, average, name, prescale_factor, postscale_factor, process_set, op)
    return [from_host(h, t) for h, t in zip(hosts, tensors)]


def grouped_allreduce_(tensors, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set, op=None):
    # type: (Sequence[Any], Optional[bool], Optional[str], int, float, float, Any, Optional[int]) -> List[Any]
    hosts = _grouped_allreduce_hosts(tensors, average, name, prescale_factor, postscale_factor, process_set, op)
    return [assign(t, h) for h, t in zip(hosts, tensors)]


def broadcast_host(host, root_rank, name, group):
    # type: (np.ndarray, int, str, Group) -> np.ndarray
    """In place from `root_rank` (a global rank) over the group's ranks."""
    root = group.root(root_rank)
    wire = host if host.ndim else host.reshape(1)  # a view: 0-d as (1,)
    wire = wire.view(np.uint8) if host.dtype.name not in _ENGINE_DTYPES else wire
    group.engine.broadcast(name, wire, root=root, dtype=wire.dtype.name)
    return host


def _broadcast_host(tensor, root_rank, name, process_set):
    # type: (Any, int, Optional[str], Any) -> np.ndarray
    host, group = to_host(tensor, _ENGINE_DTYPES + ("int8", "bool")), Group(process_set, "hvd.broadcast")
    return broadcast_host(host, root_rank, _name("broadcast", name, group), group)


def broadcast(tensor, root_rank, name=None, priority=0, process_set=global_process_set):
    # type: (Any, int, Optional[str], int, Any) -> Any
    """A new NDArray holding root_rank's `tensor`."""
    return from_host(_broadcast_host(tensor, root_rank, name, process_set), tensor)


def broadcast_(tensor, root_rank, name=None, priority=0, process_set=global_process_set):
    # type: (Any, int, Optional[str], int, Any) -> Any
    """In place: `tensor` becomes root_rank's; returns it."""
    return assign(tensor, _broadcast_host(tensor, root_rank, name, process_set))


def allgather_host(host, name, group):
    # type: (np.ndarray, str, Group) -> np.ndarray
    if host.ndim == 0:
        raise ValueError("allgather needs at least one dimension (it concatenates along the first)")
    wire = host.view(np.uint8).reshape(host.shape[:1] + (-1,)) if host.dtype.name not in _ENGINE_DTYPES else host
    data, _ = group.engine.allgather(name, wire, dtype=wire.dtype.name)
    return np.frombuffer(bytes(data), dtype=host.dtype).reshape((-1,) + host.shape[1:]).copy()


def allgather(tensor, name=None, priority=0, process_set=global_process_set):
    # type: (Any, Optional[str], int, Any) -> Any
    """The ranks' tensors concatenated along the first dimension (its size may differ by rank)."""
    host, group = to_host(tensor, _ENGINE_DTYPES + ("int8", "bool")), Group(process_set, "hvd.allgather")
    return from_host(allgather_host(host, _name("allgather", name, group), group), tensor)


def grouped_allgather(tensors, name=None, priority=0, process_set=global_process_set):
    # type: (Sequence[Any], Optional[str], int, Any) -> List[Any]
    group = Group(process_set, "hvd.grouped_allgather")
    return [from_host(allgather_host(to_host(t, _ENGINE_DTYPES + ("int8", "bool")), n, group), t)
            for t, n in zip(tensors, _group_names("grouped_allgather", name, len(tensors), group))]


def _agree(kind, name, fields, group):
    # type: (str, str, Sequence[int], Group) -> np.ndarray
    """Every rank's `fields` (int64), so that a disagreement raises the same error on every rank."""
    record = np.asarray(list(fields), dtype=np.int64)
    return allgather_host(record.reshape(1, -1), "%s.agree" % name, group).reshape(group.size, -1)


_MAX_DIMS = 8
_DTYPE_CODES = {name: i for i, name in enumerate(_ENGINE_DTYPES + ("int8", "bool"))}


def alltoall(tensor, splits=None, name=None, priority=0, process_set=global_process_set):
    # type: (Any, Any, Optional[str], int, Any) -> Any
    """Rank r sends splits[d] rows of `tensor` (in order) to each rank d and receives what every rank sends it,
    concatenated by source rank. With splits given, returns (received, received_splits); without, the first
    dimension is cut into equal parts and only the received NDArray is returned (Horovod's forms)."""
    import mxnet as mx

    group = Group(process_set, "hvd.alltoall")
    size = group.size
    name = _name("alltoall", name, group)
    host = to_host(tensor, _ENGINE_DTYPES + ("int8", "bool"))
    if host.ndim == 0:
        raise ValueError("alltoall needs at least one dimension (it splits along the first)")
    problem = ""
    if splits is None:
        send = [host.shape[0] // size] * size
        if host.shape[0] % size:
            problem = ("alltoall without splits needs a first dimension divisible by the %d ranks, this tensor has %d"
                       % (size, host.shape[0]))
    else:
        wanted = np.asarray(splits.asnumpy() if hasattr(splits, "asnumpy") else splits)
        if wanted.dtype.name != "int32":
            raise ValueError("alltoall splits must hold int32, not %s" % wanted.dtype.name)
        send = [int(v) for v in wanted.reshape(-1)]
        if len(send) != size or any(v < 0 for v in send) or sum(send) != host.shape[0]:
            problem = ("alltoall splits %s must give %d non-negative row counts adding up to the tensor's first "
                       "dimension %d" % (send, size, host.shape[0]))
            send = (send + [0] * size)[:size]
    # every rank learns every other's refusal and layout: all raise together, none waits for a collective
    dims = (list(host.shape[1:]) + [-1] * _MAX_DIMS)[:_MAX_DIMS]  # one record length on every rank
    table = _agree("alltoall", name, [int(bool(problem)), _DTYPE_CODES[host.dtype.name], host.ndim] + dims + send,
                   group)
    refused = [r for r in range(size) if table[r, 0]]
    if refused:
        raise _mxnet_error(problem or "alltoall '%s': rank(s) %s refused it (see their error)" % (name, refused))
    if len({tuple(row[1:-size]) for row in table.tolist()}) != 1:
        raise _mxnet_error("alltoall '%s': the ranks' tensors differ in dtype or in dimensions after the first "
                           "(rank: [dtype, ndim, dims...]): %s" % (name, {r: row[1:-size] for r, row in
                                                                         enumerate(table.tolist())}))
    everything = allgather_host(host, name, group)
    rank = group.rank
    pieces, start = [], 0
    for source in range(size):
        rows = table[source, -size:]
        offset = start + int(rows[:rank].sum())
        pieces.append(everything[offset:offset + int(rows[rank])])
        start += int(rows.sum())
    received = from_host(np.ascontiguousarray(np.concatenate(pieces, axis=0)), tensor)
    if splits is None:
        return received
    return received, mx.nd.array(table[:, -size + rank], dtype="int32", ctx=tensor.context)


def _mxnet_error(message):
    # type: (str) -> Exception
    """The exception type Horovod's MXNet ops raise for a collective they refuse (a RuntimeError)."""
    from mxnet.base import MXNetError
    return MXNetError(message)


def reducescatter(tensor, op=Average, name=None, priority=0, process_set=global_process_set, prescale_factor=1.0,
                  postscale_factor=1.0):
    # type: (Any, int, Optional[str], int, Any, float, float) -> Any
    """`op` (Sum or Average) over all ranks, of which this rank gets its part of the first dimension."""
    group = Group(process_set, "hvd.reducescatter")
    return _reducescatter_one(tensor, op, _name("reducescatter", name, group), prescale_factor, postscale_factor,
                              group)


def _reducescatter_one(tensor, op, name, prescale_factor, postscale_factor, group):
    # type: (Any, int, str, float, float, Group) -> Any
    if op not in (Sum, Average):
        raise ValueError("reducescatter supports op=hvd.Sum or hvd.Average, not %s" % OP_NAMES.get(op, op))
    host = to_host(tensor)
    if host.ndim == 0:
        raise ValueError("reducescatter needs at least one dimension (it scatters along the first)")
    reduced = reduce_host(host, op, name, prescale_factor, postscale_factor, group)
    sizes = split_sizes(host.shape[0], group.size)  # Horovod's split: the first rows % size ranks one more
    start = sum(sizes[:group.rank])
    stop = start + sizes[group.rank]
    return from_host(np.ascontiguousarray(reduced[start:stop]), tensor)


def grouped_reducescatter(tensors, op=Average, name=None, priority=0, process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    # type: (Sequence[Any], int, Optional[str], int, Any, float, float) -> List[Any]
    group = Group(process_set, "hvd.grouped_reducescatter")
    return [_reducescatter_one(t, op, n, prescale_factor, postscale_factor, group)
            for t, n in zip(tensors, _group_names("grouped_reducescatter", name, len(tensors), group))]


def gradient_sum_host(host, name):
    # type: (np.ndarray, str) -> np.ndarray
    """In place on a host array, under the engine's wire policy (the KVStore's push of gradients)."""
    _world.engine().allreduce(name, host, op="sum", dtype=host.dtype.name)
    return host


def _gradient_allreduce_(tensors, average, names, group):
    # type: (Sequence[Any], bool, Sequence[str], Group) -> None
    """The gradient path (DistributedTrainer, DistributedOptimizer): in place, under the engine's wire policy
    (fp32 as fp16 on the wire with the gradient scale unless PERSEUS_ALLREDUCE_DTYPE says otherwise). Each is
    submitted as soon as its own value exists (asnumpy waits for that array only): while MXNet's engine still
    computes the later ones (a backward pass in flight), the earlier ones are already on the wire; those
    submitted within one negotiation cycle are fused."""
    eng = group.engine
    hosts = []  # type: List[np.ndarray]
    handles = []
    for tensor, name in zip(tensors, names):
        host = to_host(tensor, _ENGINE_DTYPES)
        hosts.append(host)
        floating = host.dtype.name in _FLOATS
        handles.append(eng.allreduce_async(name, host, op="average" if average and floating else "sum",
                                           dtype=host.dtype.name))
    for handle in handles:
        handle.wait()
    for tensor, host in zip(tensors, hosts):
        if average and host.dtype.name not in _FLOATS:
            host = np.trunc(host / group.size).astype(host.dtype)
        assign(tensor, host)
