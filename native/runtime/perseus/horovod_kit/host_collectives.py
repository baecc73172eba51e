"""Horovod's collectives over host (numpy) arrays, written once for every binding whose tensors reach the engine
through host memory: allreduce(_), grouped_allreduce(_), broadcast(_), allgather, grouped_allgather, alltoall,
reducescatter, grouped_reducescatter, with Horovod 0.28's semantics. A binding gives only its tensor conversion
(`Conversion`: tensor -> fresh C-contiguous numpy array, numpy array -> tensor like another, write into a tensor,
and the exception type its framework raises for a refused collective) and binds the methods as its public names
(perseus.mxnet; tests/support/numpy_binding proves a numpy-only binding passes the same conformance rows).

The calls are exact, as Horovod's are: float32 travels as float64 (a sum of fp32 values rounded once), never
through the engine's fp16 gradient wire policy (a binding's gradient path uses that). Min, Max and Product are an
allgather and a local reduction; reducescatter is an allreduce of which each rank keeps its rows; alltoall is an
allgather of every rank's tensor and splits. Unnamed collectives are named by kind and call count (ranks call
them in the same order, as in Horovod).

Needs numpy (every binding using it has it); the rest of perseus-common does not import this module.
"""
from typing import Any, List, Optional, Sequence

import numpy as np

from perseus.horovod_kit import ops as _ops
from perseus.horovod_kit.errors import HorovodCollectiveError, NotSupportedByPerseus
from perseus.horovod_kit.naming import Namer
from perseus.horovod_kit.ops import OP_NAMES, Adasum, Average, Max, Min, Product, Sum, split_sizes
from perseus.horovod_kit.process_sets import Group, global_process_set

FLOATS = ("float16", "float32", "float64")
ENGINE_DTYPES = FLOATS + ("int32", "int64", "uint8")  # what the engine reduces
REDUCIBLE = ENGINE_DTYPES + ("int8",)  # int8 travels widened
MOVABLE = REDUCIBLE + ("bool",)  # gathered / broadcast as bytes
WIDENED = {"float32": "float64", "int8": "int32"}  # exact sums; int8 has no engine dtype
_MAX_DIMS = 8
_DTYPE_CODES = {name: i for i, name in enumerate(MOVABLE)}


class Conversion(object):
    """What a binding supplies (duck-typed; this base is numpy's own, the identity)."""

    def to_host(self, tensor):
        # type: (Any) -> np.ndarray
        return np.array(tensor, order="C", copy=True)

    def from_host(self, host, like):
        # type: (np.ndarray, Any) -> Any
        return host

    def assign(self, tensor, host):
        # type: (Any, np.ndarray) -> Any
        np.copyto(tensor, host)
        return tensor

    def refusal(self, message):
        # type: (str) -> Exception
        return HorovodCollectiveError(message)


def _math_dtype(dtype):
    # type: (np.dtype) -> Any
    """The dtype scaling and averaging run in (the kit's rule; host arrays are scaled on the host)."""
    kind = _ops.scale_kind(dtype.name not in FLOATS, dtype.name == "float16", on_host=True)
    return {_ops.SCALE_IN_FLOAT64: np.float64, _ops.SCALE_IN_FLOAT32: np.float32}.get(kind, dtype.type)


def check_dtype(framework, name, allowed):
    # type: (str, str, Sequence[str]) -> None
    if name not in allowed:
        raise TypeError("%s: dtype %s is not supported here (one of %s)" % (framework, name, ", ".join(allowed)))


def scale(host, factor):
    # type: (Any, float) -> Any
    """Horovod's pre/post scaling: integers in float64 then cast back (toward zero), float16 in float32. Any array
    with numpy's astype and dtype: numpy's, or a framework's on its device (MXNet's GPU NDArrays)."""
    if factor == 1.0:
        return host
    math = _math_dtype(np.dtype(host.dtype))
    return (host.astype(math) * math(factor)).astype(host.dtype)


def divide(host, count):
    # type: (Any, int) -> Any
    """Average's division, exact as Horovod's: in the scaling dtype, integers cast back toward zero (any array, as
    scale())."""
    math = _math_dtype(np.dtype(host.dtype))
    return (host.astype(math) / math(count)).astype(host.dtype)


def sum_host(host, name, group):
    # type: (np.ndarray, str, Group) -> np.ndarray
    wide = WIDENED.get(host.dtype.name)
    wire = host.astype(wide) if wide else host.copy()
    # the engine checks that every rank's shape agrees: a 0-d array goes as (1,), every other as it is
    group.engine.allreduce(name, wire if wire.ndim else wire.reshape(1), op="sum", dtype=wire.dtype.name)
    return wire.astype(host.dtype) if wide else wire


def allgather_host(host, name, group):
    # type: (np.ndarray, str, Group) -> np.ndarray
    """The group's arrays concatenated along the first dimension (its size may differ by rank)."""
    if host.ndim == 0:
        raise ValueError("allgather needs at least one dimension (it concatenates along the first)")
    wire = host.view(np.uint8).reshape(host.shape[:1] + (-1,)) if host.dtype.name not in ENGINE_DTYPES else host
    data, _ = group.engine.allgather(name, wire, dtype=wire.dtype.name)
    return np.frombuffer(bytes(data), dtype=host.dtype).reshape((-1,) + host.shape[1:]).copy()


def reduce_host(host, op, name, prescale_factor, postscale_factor, group):
    # type: (np.ndarray, int, str, float, float, Group) -> np.ndarray
    """A new host array: `op` over the group's ranks of `host` (Horovod's semantics, exact)."""
    host = scale(host, prescale_factor)
    if op in (Sum, Average):
        out = sum_host(host, name, group)
        if op == Average:
            out = divide(out, group.size)
    else:
        rows = allgather_host(host.reshape((1,) + host.shape), name, group).reshape((-1,) + host.shape)
        out = {Min: rows.min(axis=0), Max: rows.max(axis=0), Product: rows.prod(axis=0)}[op].astype(host.dtype)
    return scale(np.asarray(out).reshape(host.shape), postscale_factor)


def broadcast_host(host, root_rank, name, group):
    # type: (np.ndarray, int, str, Group) -> np.ndarray
    """In place from `root_rank` (a global rank) over the group's ranks."""
    root = group.root(root_rank)
    wire = host if host.ndim else host.reshape(1)  # a view: 0-d as (1,)
    wire = wire.view(np.uint8) if host.dtype.name not in ENGINE_DTYPES else wire
    group.engine.broadcast(name, wire, root=root, dtype=wire.dtype.name)
    return host


class HostCollectives(object):
    """The public collectives of a binding whose tensors `conversion` turns into host arrays and back. `framework`
    names the binding in refusals (perseus.mxnet); `namer` is the binding's naming rule (Horovod's MXNet
    qualifies a given name with the kind)."""

    def __init__(self, conversion, framework, namer=None):
        # type: (Any, str, Optional[Namer]) -> None
        self.conversion = conversion
        self.framework = framework
        self.namer = namer or Namer(qualify_given=True)

    # -- helpers a binding's other modules use ---------------------------------------------------------------
    def name(self, kind, name, group):
        # type: (str, Optional[str], Group) -> str
        return self.namer.name(kind, name, group.scope)

    def group_names(self, kind, name, count, group):
        # type: (str, Optional[str], int, Group) -> List[str]
        return self.namer.names(kind, name, count, group.scope)

    def to_host(self, tensor, allowed=REDUCIBLE):
        # type: (Any, Sequence[str]) -> np.ndarray
        host = self.conversion.to_host(tensor)
        if not host.flags.c_contiguous:
            host = host.copy(order="C")
        check_dtype(self.framework, host.dtype.name, allowed)
        return host

    def _reduction(self, op, average):
        # type: (Optional[int], Optional[bool]) -> int
        """The kit's rule (op=, or the deprecated average=; neither: Average); Adasum is not offered here."""
        op = _ops.resolve_op(op, average)
        if op == Adasum:
            raise NotSupportedByPerseus("not supported: op=hvd.Adasum in %s (use hvd.Average or hvd.Sum)"
                                        % self.framework)
        return op

    # -- allreduce -----------------------------------------------------------------------------------------
    def _allreduce_host(self, tensor, average, name, prescale_factor, postscale_factor, process_set, op):
        # type: (Any, Optional[bool], Optional[str], float, float, Any, Optional[int]) -> np.ndarray
        host, reduction = self.to_host(tensor), self._reduction(op, average)
        group = Group(process_set, "hvd.allreduce")
        return reduce_host(host, reduction, self.name("allreduce", name, group), prescale_factor, postscale_factor,
                           group)

    def allreduce(self, tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=global_process_set, op=None):
        # type: (Any, Optional[bool], Optional[str], int, float, float, Any, Optional[int]) -> Any
        """A new tensor: `op` (default Average) of `tensor` over all ranks."""
        host = self._allreduce_host(tensor, average, name, prescale_factor, postscale_factor, process_set, op)
        return self.conversion.from_host(host, tensor)

    def allreduce_(self, tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                   process_set=global_process_set, op=None):
        # type: (Any, Optional[bool], Optional[str], int, float, float, Any, Optional[int]) -> Any
        """In place: `tensor` becomes `op` (default Average) over all ranks; returns it."""
        host = self._allreduce_host(tensor, average, name, prescale_factor, postscale_factor, process_set, op)
        return self.conversion.assign(tensor, host)

    def _grouped_allreduce_hosts(self, tensors, average, name, prescale_factor, postscale_factor, process_set, op):
        # type: (Sequence[Any], Optional[bool], Optional[str], float, float, Any, Optional[int]) -> List[np.ndarray]
        reduction, group = self._reduction(op, average), Group(process_set, "hvd.grouped_allreduce")
        return [reduce_host(self.to_host(t), reduction, n, prescale_factor, postscale_factor, group)
                for t, n in zip(tensors, self.group_names("grouped_allreduce", name, len(tensors), group))]

    def grouped_allreduce(self, tensors, average=None, name=None, priority=0, prescale_factor=1.0,
                          postscale_factor=1.0, process_set=global_process_set, op=None):
        # type: (Sequence[Any], Optional[bool], Optional[str], int, float, float, Any, Optional[int]) -> List[Any]
        """New tensors: `op` of each of `tensors` over all ranks."""
        hosts = self._grouped_allreduce_hosts(tensors, average, name, prescale_factor, postscale_factor,
                                              process_set, op)
        return [self.conversion.from_host(h, t) for h, t in zip(hosts, tensors)]

    def grouped_allreduce_(self, tensors, average=None, name=None, priority=0, prescale_factor=1.0,
                           postscale_factor=1.0, process_set=global_process_set, op=None):
        # type: (Sequence[Any], Optional[bool], Optional[str], int, float, float, Any, Optional[int]) -> List[Any]
        """In place: each of `tensors` becomes `op` over all ranks."""
        hosts = self._grouped_allreduce_hosts(tensors, average, name, prescale_factor, postscale_factor,
                                              process_set, op)
        return [self.conversion.assign(t, h) for h, t in zip(hosts, tensors)]

    # -- broadcast -----------------------------------------------------------------------------------------
    def _broadcast_host(self, tensor, root_rank, name, process_set):
        # type: (Any, int, Optional[str], Any) -> np.ndarray
        host, group = self.to_host(tensor, MOVABLE), Group(process_set, "hvd.broadcast")
        return broadcast_host(host, root_rank, self.name("broadcast", name, group), group)

    def broadcast(self, tensor, root_rank, name=None, priority=0, process_set=global_process_set):
        # type: (Any, int, Optional[str], int, Any) -> Any
        """A new tensor holding root_rank's `tensor`."""
        return self.conversion.from_host(self._broadcast_host(tensor, root_rank, name, process_set), tensor)

    def broadcast_(self, tensor, root_rank, name=None, priority=0, process_set=global_process_set):
        # type: (Any, int, Optional[str], int, Any) -> Any
        """In place: `tensor` becomes root_rank's; returns it."""
        return self.conversion.assign(tensor, self._broadcast_host(tensor, root_rank, name, process_set))

    # -- allgather -----------------------------------------------------------------------------------------
    def allgather(self, tensor, name=None, priority=0, process_set=global_process_set):
        # type: (Any, Optional[str], int, Any) -> Any
        """The ranks' tensors concatenated along the first dimension (its size may differ by rank)."""
        host, group = self.to_host(tensor, MOVABLE), Group(process_set, "hvd.allgather")
        return self.conversion.from_host(allgather_host(host, self.name("allgather", name, group), group), tensor)

    def grouped_allgather(self, tensors, name=None, priority=0, process_set=global_process_set):
        # type: (Sequence[Any], Optional[str], int, Any) -> List[Any]
        """allgather of each of `tensors`."""
        group = Group(process_set, "hvd.grouped_allgather")
        return [self.conversion.from_host(allgather_host(self.to_host(t, MOVABLE), n, group), t)
                for t, n in zip(tensors, self.group_names("grouped_allgather", name, len(tensors), group))]

    # -- alltoall ------------------------------------------------------------------------------------------
    def _agree(self, name, fields, group):
        # type: (str, Sequence[int], Group) -> np.ndarray
        """Every rank's `fields` (int64), so that a disagreement raises the same error on every rank."""
        record = np.asarray(list(fields), dtype=np.int64)
        return allgather_host(record.reshape(1, -1), "%s.agree" % name, group).reshape(group.size, -1)

    def alltoall(self, tensor, splits=None, name=None, priority=0, process_set=global_process_set):
        # type: (Any, Any, Optional[str], int, Any) -> Any
        """Rank r sends splits[d] rows of `tensor` (in order) to each rank d and receives what every rank sends
        it, concatenated by source rank. With splits given, returns (received, received_splits); without, the first
        dimension is cut into equal parts and only the received tensor is returned (Horovod's forms)."""
        group = Group(process_set, "hvd.alltoall")
        size = group.size
        name = self.name("alltoall", name, group)
        host = self.to_host(tensor, MOVABLE)
        if host.ndim == 0:
            raise ValueError("alltoall needs at least one dimension (it splits along the first)")
        problem = ""
        if splits is None:
            send = [host.shape[0] // size] * size
            if host.shape[0] % size:
                problem = ("alltoall without splits needs a first dimension divisible by the %d ranks, this tensor "
                           "has %d" % (size, host.shape[0]))
        else:
            wanted = np.asarray(splits) if isinstance(splits, (list, tuple, np.ndarray)) else \
                self.conversion.to_host(splits)
            if wanted.dtype.name != "int32":
                raise ValueError("alltoall splits must hold int32, not %s" % wanted.dtype.name)
            send = [int(v) for v in wanted.reshape(-1)]
            if len(send) != size or any(v < 0 for v in send) or sum(send) != host.shape[0]:
                problem = ("alltoall splits %s must give %d non-negative row counts adding up to the tensor's first "
                           "dimension %d" % (send, size, host.shape[0]))
                send = (send + [0] * size)[:size]
        # every rank learns every other's refusal and layout: all raise together, none waits for a collective
        dims = (list(host.shape[1:]) + [-1] * _MAX_DIMS)[:_MAX_DIMS]  # one record length on every rank
        table = self._agree(name, [int(bool(problem)), _DTYPE_CODES[host.dtype.name], host.ndim] + dims + send,
                            group)
        refused = [r for r in range(size) if table[r, 0]]
        if refused:
            raise self.conversion.refusal(problem or "alltoall '%s': rank(s) %s refused it (see their error)"
                                          % (name, refused))
        if len({tuple(row[1:-size]) for row in table.tolist()}) != 1:
            raise self.conversion.refusal(
                "alltoall '%s': the ranks' tensors differ in dtype or in dimensions after the first (rank: [dtype, "
                "ndim, dims...]): %s" % (name, {r: row[1:-size] for r, row in enumerate(table.tolist())}))
        everything = allgather_host(host, name, group)
        rank = group.rank
        pieces, start = [], 0
        for source in range(size):
            rows = table[source, -size:]
            offset = start + int(rows[:rank].sum())
            pieces.append(everything[offset:offset + int(rows[rank])])
            start += int(rows.sum())
        received = self.conversion.from_host(np.ascontiguousarray(np.concatenate(pieces, axis=0)), tensor)
        if splits is None:
            return received
        return received, self.conversion.from_host(np.ascontiguousarray(table[:, -size + rank], dtype=np.int32),
                                                   tensor)

    # -- reducescatter -------------------------------------------------------------------------------------
    def reducescatter(self, tensor, op=Average, name=None, priority=0, process_set=global_process_set,
                      prescale_factor=1.0, postscale_factor=1.0):
        # type: (Any, int, Optional[str], int, Any, float, float) -> Any
        """`op` (Sum or Average) over all ranks, of which this rank gets its part of the first dimension."""
        group = Group(process_set, "hvd.reducescatter")
        return self._reducescatter_one(tensor, op, self.name("reducescatter", name, group), prescale_factor,
                                       postscale_factor, group)

    def _reducescatter_one(self, tensor, op, name, prescale_factor, postscale_factor, group):
        # type: (Any, int, str, float, float, Group) -> Any
        if op not in (Sum, Average):
            raise ValueError("reducescatter supports op=hvd.Sum or hvd.Average, not %s" % OP_NAMES.get(op, op))
        host = self.to_host(tensor)
        if host.ndim == 0:
            raise ValueError("reducescatter needs at least one dimension (it scatters along the first)")
        reduced = reduce_host(host, op, name, prescale_factor, postscale_factor, group)
        sizes = split_sizes(host.shape[0], group.size)  # Horovod's split: the first rows % size ranks one more
        start = sum(sizes[:group.rank])
        stop = start + sizes[group.rank]
        return self.conversion.from_host(np.ascontiguousarray(reduced[start:stop]), tensor)

    def grouped_reducescatter(self, tensors, op=Average, name=None, priority=0, process_set=global_process_set,
                              prescale_factor=1.0, postscale_factor=1.0):
        # type: (Sequence[Any], int, Optional[str], int, Any, float, float) -> List[Any]
        """reducescatter of each of `tensors`."""
        group = Group(process_set, "hvd.grouped_reducescatter")
        return [self._reducescatter_one(t, op, n, prescale_factor, postscale_factor, group)
                for t, n in zip(tensors, self.group_names("grouped_reducescatter", name, len(tensors), group))]
