"""Horovod collectives (allreduce, allgather, broadcast, reducescatter, alltoall, their async, in-place and grouped
forms, join, barrier) on perseus's engine, with Horovod 0.28's signatures and autograd functions.

Every call first exchanges a small fixed-size record (operation, name, dtype, shape, root, op) among
all ranks (an engine allgather; _negotiation.py). Collectives are matched by name, as Horovod's coordinator
matches them: an async call the other ranks have not reached yet is deferred and runs when they submit it. All
ranks then check the same records, so a mismatch (another shape under one name, another operation, another root)
raises the same clear error on every rank instead of crashing or hanging, and a rank inside hvd.join() learns
which collective to take part in.
"""

import itertools
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from perseus import config as perseus_config
from perseus.torch import _control as _ops
from perseus.torch.horovod import basics
from perseus.torch.horovod.compression import Compression, Compressor


from perseus.horovod_kit import ops as _kit_ops
from perseus.horovod_kit.errors import HorovodCollectiveError, HorovodInternalError
from perseus.horovod_kit.ops import OP_NAMES as _OP_NAMES
from perseus.horovod_kit.ops import Adasum, Average, Max, Min, Product, Sum
from perseus.horovod_kit.process_sets import check_global, global_process_set
from perseus.torch import _comm
from perseus.torch.horovod import _negotiation
from perseus.torch.horovod._negotiation import (K_ALLGATHER, K_ALLREDUCE, K_ALLTOALL, K_BARRIER,  # noqa: F401
                                                K_BROADCAST, K_BROADCAST_MANY, K_REDUCESCATTER, K_STEP,
                                                Collective, make_row)
from perseus.torch.horovod.process_sets import on_process_set, set_root
_TORCH_OPS = {Average: _ops.SUM, Sum: _ops.SUM, Min: _ops.MIN, Max: _ops.MAX,
              Product: _ops.PRODUCT}

_control = _negotiation.Negotiator()
_digest = _negotiation.digest
Record = _negotiation.Record


def forget_names() -> None:
    """After an elastic reset: unnamed collectives are numbered from zero again, on every rank of the new
    generation alike (a new worker has issued none), and no handle or deferred collective of the old generation
    remains."""
    _control.forget()
    with _handles_lock:
        _handles.clear()


def _active(records: List[Record]) -> List[Record]:
    return [r for r in records if not r.joined]


def _fmt_shape(shape: Optional[Tuple[int, ...]]) -> str:
    return "[{}]".format(", ".join(str(s) for s in shape)) if shape is not None else "?"


def check_agreement(records: List[Record], api: str, name: str, same_shape: bool = True,
                    same_trailing_shape: bool = False) -> List[Record]:
    """Raise (on every rank alike) unless the non-joined ranks agree; returns them."""
    active = _active(records)
    first = active[0]
    for other in active[1:]:
        if other.kind != first.kind or other.digest != first.digest:
            raise HorovodCollectiveError(
                "{}: ranks called different collectives: rank {} {}, rank {} {}; every rank must issue the same "
                "collectives in the same order".format(api, first.rank, first.describe(), other.rank, other.describe()))
    for field, label in (("dtype", "dtypes"), ("op", "reduction ops"), ("root", "root ranks")):
        values = {getattr(r, field) for r in active}
        if len(values) > 1:
            listing = ", ".join("rank {} {}".format(r.rank, _show(field, getattr(r, field))) for r in active)
            raise HorovodCollectiveError("{} '{}': ranks passed different {}: {}".format(api, name, label, listing))
    if same_shape or same_trailing_shape:
        shapes = {(r.shape if same_shape else (len(r.shape or ()), (r.shape or ())[1:])) for r in active}
        if len(shapes) > 1:
            listing = ", ".join("rank {} {}".format(r.rank, _fmt_shape(r.shape)) for r in active)
            rule = "the same shape" if same_shape else "the same number of dimensions and the same sizes after the first"
            raise HorovodCollectiveError(
                "{} '{}': ranks passed tensors of different shapes under one name: {}; every rank must pass {}".format(
                    api, name, listing, rule))
    return active


def _show(field: str, value: Any) -> str:
    if field == "op":
        return _OP_NAMES.get(value, str(value))
    return str(value)


def _scaled_op(op: Optional[int], average: Optional[bool], default: int = Average) -> int:
    return _kit_ops.resolve_op(op, average, default)


_INTEGER = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _scale(tensor: torch.Tensor, factor: float) -> torch.Tensor:
    """tensor * factor by Horovod's rule (perseus.horovod_kit.ops): integers in float64, truncated back; float16
    on the host in float32; other floats in their dtype. A new tensor unless factor is 1."""
    if factor == 1.0:
        return tensor
    kind = _kit_ops.scale_kind(tensor.dtype in _INTEGER, tensor.dtype == torch.float16, not tensor.is_cuda)
    if kind == _kit_ops.SCALE_IN_FLOAT64:
        return (tensor.to(torch.float64) * factor).to(tensor.dtype)
    if kind == _kit_ops.SCALE_IN_FLOAT32:
        return (tensor.to(torch.float32) * factor).to(tensor.dtype)
    return tensor * factor


def _any_joined(records: List[Record]) -> List[int]:
    return [r.rank for r in records if r.joined]


def _refuse_joined(records: List[Record], api: str, name: str) -> None:
    joined = _any_joined(records)
    if joined:
        raise HorovodCollectiveError(
            "{} '{}': not supported while rank(s) {} have called hvd.join() (as in Horovod, only allreduce runs "
            "with joined ranks); finish these collectives before hvd.join()".format(
                api, name, ", ".join(str(r) for r in joined)))


# ---- handles for the async forms -------------------------------------------------------------

@dataclass
class _Pending:
    parts: List[Collective]  # one per collective (a grouped call has several); each runs now or later
    world: Any
    grouped: bool = False

    @property
    def names(self) -> List[str]:
        return [p.name for p in self.parts]


_handles: Dict[int, _Pending] = {}
_handle_ids = itertools.count(1)
_handles_lock = threading.Lock()


def _submit(api: str, name: str, row: List[int], start: Callable[[List[Record]], _negotiation.Started]) -> int:
    """Submit one collective (deferred when the other ranks do not have it yet); returns its handle. `start`
    checks every rank's record and starts the engine work, once every rank has the collective."""
    world = basics.world()
    _control.claim(world, name, api)
    collective = Collective(row, start, name)
    try:
        _control.submit(collective, defer=True)
    except BaseException:
        _control.release(world, [name])
        raise
    if collective.error is not None:
        _control.release(world, [name])
        raise collective.error
    with _handles_lock:
        handle = next(_handle_ids)
        _handles[handle] = _Pending([collective], world)
    return handle


def _works(collective: Collective) -> List[Any]:
    return collective.started[0] if collective.started is not None else []


def poll(handle: int) -> bool:
    """Whether the async operation of `handle` has finished (synchronize() will not block). A collective still
    deferred (the other ranks had not submitted it) exchanges once with them first, so that it can run: that
    waits for the other ranks to reach a collective call."""
    with _handles_lock:
        pending = _handles.get(handle)
    if pending is None:
        raise ValueError("handle {} is unknown or already synchronized".format(handle))
    for part in pending.parts:
        if not part.ran:
            _control.poll(part)
    return all(p.ran and all(bool(w.is_completed()) for w in _works(p)) for p in pending.parts)


def synchronize(handle: int) -> Any:
    """Wait for the async operation of `handle`; returns its output tensor (alltoall: output and received
    splits; a grouped call: the list of outputs). An engine error is raised as HorovodInternalError, as Horovod
    does; a mismatch between the ranks as HorovodCollectiveError."""
    with _handles_lock:
        pending = _handles.pop(handle, None)
    if pending is None:
        raise ValueError("handle {} is unknown or already synchronized".format(handle))
    try:
        results = [_result(part) for part in pending.parts]
    finally:
        _control.release(pending.world, pending.names)
    return results if pending.grouped else results[0]


def _result(collective: Collective) -> Any:
    if not collective.ran:
        _control.wait_for(collective)
    if collective.error is not None:
        raise collective.error
    assert collective.started is not None
    works, finish = collective.started
    try:
        for work in works:
            work.wait()
    except HorovodInternalError:
        raise
    except RuntimeError as error:
        raise HorovodInternalError(str(error)) from error
    return finish()


def _started(work: Any, finish: Callable[[], Any]) -> _negotiation.Started:
    return [w for w in (work if isinstance(work, (list, tuple)) else [work]) if w is not None], finish


# ---- allreduce --------------------------------------------------------------------------------

def _adasum_pair(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    dot = torch.dot(a, b)
    anorm, bnorm = torch.dot(a, a), torch.dot(b, b)
    acoeff = 1.0 - dot / (2 * anorm) if anorm > 0 else torch.tensor(1.0, dtype=a.dtype)
    bcoeff = 1.0 - dot / (2 * bnorm) if bnorm > 0 else torch.tensor(1.0, dtype=a.dtype)
    return acoeff * a + bcoeff * b


def adasum_combine(tensors: List[torch.Tensor]) -> torch.Tensor:
    """Adasum of the ranks' tensors in rank order, pairwise by distance 1, 2, 4, ... (Horovod's tree)."""
    level = [t.reshape(-1).double() for t in tensors]
    while len(level) > 1:
        level = [_adasum_pair(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def _allreduce_start(tensor: torch.Tensor, output: torch.Tensor, name: Optional[str], op: int,
                     compression: Any, prescale_factor: float, postscale_factor: float,
                     process_set: Any = global_process_set) -> int:
    check_global(process_set, "hvd.allreduce")
    name = name or _control.auto_name("allreduce")
    if tensor.is_sparse:
        raise ValueError("allreduce of sparse tensor '{}': use hvd.sparse_allreduce_async, or tensor.to_dense()"
                         .format(name))
    _kit_ops.check_scalable(op, prescale_factor, postscale_factor, "hvd.allreduce")
    compressor = compression if compression is not None else Compression.none
    source = tensor.detach()
    if op == Adasum:
        wire, ctx = source, None
    else:
        wire, ctx = compressor.compress(_scale(source, prescale_factor))
        wire = (wire.clone() if wire is tensor or wire is source else wire).contiguous()
    # the record carries what goes on the wire, so that a joined rank sends zeros of that dtype
    row = make_row(K_ALLREDUCE, name, wire, op=op, digest_=_digest(name))

    def start(records: List[Record]) -> _negotiation.Started:
        active = check_agreement(records, "hvd.allreduce", name)
        joined = len(records) - len(active)
        if joined and op in (Min, Max, Product, Adasum):
            raise HorovodCollectiveError("hvd.allreduce '{}': {} cannot run while {} rank(s) have called hvd.join() "
                                         "(a joined rank contributes zeros)".format(name, _OP_NAMES[op], joined))
        world = basics.world()
        if op == Adasum:
            return _adasum_start(source, output, name, prescale_factor, postscale_factor, world)
        work = _ops.allreduce(wire, _TORCH_OPS[op])
        post = _kit_ops.postscale_for(op, world.size, postscale_factor)

        def finish() -> torch.Tensor:
            result = compressor.decompress(wire, ctx)
            if result.dtype != output.dtype:
                result = result.to(output.dtype)
            output.copy_(_scale(result, post).reshape(output.shape))
            return output

        return _started(work, finish)

    return _submit("hvd.allreduce", name, row, start)


def _adasum_start(tensor: torch.Tensor, output: torch.Tensor, name: str, prescale: float, postscale: float,
                  world: Any) -> _negotiation.Started:
    size = world.size
    if size & (size - 1):
        raise HorovodCollectiveError("hvd.allreduce '{}' with op=hvd.Adasum needs a power-of-two number of ranks "
                                     "(Horovod's pairwise tree), this job has {}".format(name, size))
    source = (tensor * prescale if prescale != 1.0 else tensor).contiguous()
    gathered = [torch.empty_like(source) for _ in range(size)]
    work = _ops.allgather(gathered, source)

    def finish() -> torch.Tensor:
        combined = adasum_combine(gathered).to(output.dtype).reshape(output.shape)
        output.copy_(combined * postscale if postscale != 1.0 else combined)
        return output

    return _started(work, finish)


@on_process_set("hvd.allreduce")
def allreduce_async(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
                    op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                    process_set: Any = global_process_set) -> int:
    op = _scaled_op(op, average)
    return _allreduce_start(tensor, torch.empty_like(tensor), name, op, None, prescale_factor, postscale_factor,
                            process_set)


@on_process_set("hvd.allreduce")
def allreduce_async_(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
                     op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                     process_set: Any = global_process_set) -> int:
    op = _scaled_op(op, average)
    return _allreduce_start(tensor, tensor, name, op, None, prescale_factor, postscale_factor, process_set)


class _Allreduce(torch.autograd.Function):
    """Horovod's HorovodAllreduce: the gradient is the allreduce of the output's gradient with the same op and
    scale factors (Sum: size x, Average: 1 x the mean gradient)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str], op: int, prescale_factor: float,
                postscale_factor: float) -> torch.Tensor:
        ctx.world = _comm.current()  # the process set's world, for backward
        ctx.op, ctx.prescale_factor, ctx.postscale_factor = op, prescale_factor, postscale_factor
        return synchronize(_allreduce_start(tensor, torch.empty_like(tensor), name, op, None, prescale_factor,
                                            postscale_factor))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Any:
        with _comm.using(ctx.world):
            grad = allreduce(grad_output, op=ctx.op, prescale_factor=ctx.prescale_factor,
                             postscale_factor=ctx.postscale_factor)
            return grad, None, None, None, None


@on_process_set("hvd.allreduce")
def allreduce(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
              compression: Any = Compression.none, op: Optional[int] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, process_set: Any = global_process_set) -> torch.Tensor:
    """A new tensor: the reduction (default: average) of `tensor` over all ranks; differentiable."""
    op = _scaled_op(op, average)
    check_global(process_set, "hvd.allreduce")
    compressor = compression if compression is not None else Compression.none
    if op == Adasum or compressor is Compression.none:
        return _Allreduce.apply(tensor, name, op, prescale_factor, postscale_factor)
    compressed, ctx = compressor.compress(tensor)
    summed = _Allreduce.apply(compressed, name, op, prescale_factor, postscale_factor)
    return compressor.decompress(summed, ctx)


@on_process_set("hvd.allreduce")
def allreduce_(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
               op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
               process_set: Any = global_process_set) -> torch.Tensor:
    """In place: `tensor` becomes the reduction over all ranks."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, process_set))


# ---- grouped allreduce ----------------------------------------------------------------------------

def _group_names(kind: str, name: Optional[str], count: int) -> List[str]:
    base = name or _control.auto_name(kind)
    return ["{}.{}".format(base, i) for i in range(count)]


def _grouped_start(starts: List[int]) -> int:
    """One handle for a group of started handles: synchronize() gives the list of their results."""
    world = basics.world()
    with _handles_lock:
        parts = [part for h in starts for part in _handles.pop(h).parts]
        handle = next(_handle_ids)
        _handles[handle] = _Pending(parts, world, grouped=True)
    return handle


@on_process_set("hvd.grouped_allreduce")
def grouped_allreduce_async(tensors: List[torch.Tensor], average: Optional[bool] = None, name: Optional[str] = None,
                            op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                            process_set: Any = global_process_set) -> int:
    op = _scaled_op(op, average)
    names = _group_names("grouped_allreduce", name, len(tensors))
    return _grouped_start([_allreduce_start(t, torch.empty_like(t), n, op, None, prescale_factor, postscale_factor,
                                            process_set) for t, n in zip(tensors, names)])


@on_process_set("hvd.grouped_allreduce")
def grouped_allreduce_async_(tensors: List[torch.Tensor], average: Optional[bool] = None, name: Optional[str] = None,
                             op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                             process_set: Any = global_process_set) -> int:
    op = _scaled_op(op, average)
    names = _group_names("grouped_allreduce", name, len(tensors))
    return _grouped_start([_allreduce_start(t, t, n, op, None, prescale_factor, postscale_factor, process_set)
                           for t, n in zip(tensors, names)])


class _GroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, name: Optional[str], op: int, prescale_factor: float, postscale_factor: float,
                *tensors: torch.Tensor) -> Any:
        ctx.world = _comm.current()  # the process set's world, for backward
        ctx.op, ctx.prescale_factor, ctx.postscale_factor = op, prescale_factor, postscale_factor
        return tuple(synchronize(grouped_allreduce_async(list(tensors), name=name, op=op,
                                                         prescale_factor=prescale_factor,
                                                         postscale_factor=postscale_factor)))

    @staticmethod
    def backward(ctx: Any, *grad_output: torch.Tensor) -> Any:
        with _comm.using(ctx.world):
            grads = grouped_allreduce(list(grad_output), op=ctx.op, prescale_factor=ctx.prescale_factor,
                                      postscale_factor=ctx.postscale_factor)
            return (None, None, None, None) + tuple(grads)


@on_process_set("hvd.grouped_allreduce")
def grouped_allreduce(tensors: List[torch.Tensor], average: Optional[bool] = None, name: Optional[str] = None,
                      compression: Any = Compression.none, op: Optional[int] = None, prescale_factor: float = 1.0,
                      postscale_factor: float = 1.0, process_set: Any = global_process_set) -> List[torch.Tensor]:
    """New tensors: the reduction of each of `tensors` over all ranks; differentiable."""
    op = _scaled_op(op, average)
    check_global(process_set, "hvd.grouped_allreduce")
    compressor = compression if compression is not None else Compression.none
    pairs = [compressor.compress(t) for t in tensors]
    reduced = _GroupedAllreduce.apply(name, op, prescale_factor, postscale_factor, *[p[0] for p in pairs])
    return [compressor.decompress(t, c) for t, (_, c) in zip(reduced, pairs)]


@on_process_set("hvd.grouped_allreduce")
def grouped_allreduce_(tensors: List[torch.Tensor], average: Optional[bool] = None, name: Optional[str] = None,
                       op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                       process_set: Any = global_process_set) -> List[torch.Tensor]:
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                process_set))


@on_process_set("hvd.sparse_allreduce_async")
def sparse_allreduce_async(tensor: torch.Tensor, name: str, op: int, process_set: Any = global_process_set) -> Any:
    """Horovod's sparse allreduce: an allgather of the indices and of the values; returns a function that waits
    and gives the sparse sum (Average: divided by the ranks) with duplicate indices left uncoalesced."""
    check_global(process_set, "hvd.sparse_allreduce_async")
    if not perseus_config.get().change_hvd_allgather:
        pass  # the parts are gathered by concatenation whatever PERSEUS_CHANGE_HVD_ALLGATHER says
    t = tensor
    indices_handle = _allgather_start(t._indices().transpose(0, 1).contiguous(), "{}.indices".format(name),
                                      concatenate=True)
    values_handle = _allgather_start(t._values(), "{}.values".format(name), concatenate=True)
    size = basics.size()

    def handle() -> torch.Tensor:
        values = synchronize(values_handle)
        indices = synchronize(indices_handle)
        values = values / size if op == Average else values
        if indices.dim() == 0 or values.dim() == 0:
            return t.new().resize_as_(t)
        return torch.sparse_coo_tensor(indices.transpose(0, 1), values, t.size())

    return handle


# ---- allgather --------------------------------------------------------------------------------

def _allgather_start(tensor: torch.Tensor, name: Optional[str], concatenate: Optional[bool] = None,
                     process_set: Any = global_process_set) -> int:
    check_global(process_set, "hvd.allgather")
    name = name or _control.auto_name("allgather")
    if concatenate is None:
        concatenate = perseus_config.get().change_hvd_allgather
    source = tensor.detach()
    source = source.reshape(1) if (concatenate and source.dim() == 0) else source
    row = make_row(K_ALLGATHER, name, source, digest_=_digest(name))

    def start(records: List[Record]) -> _negotiation.Started:
        _refuse_joined(records, "hvd.allgather", name)
        if not concatenate and len({r.shape for r in records}) > 1 and len({r.shape[1:] for r in records if r.shape}) == 1:
            listing = ", ".join("rank {} {}".format(r.rank, _fmt_shape(r.shape)) for r in records)
            raise HorovodCollectiveError(
                "hvd.allgather '{}': ranks passed different first dimensions ({}); PERSEUS_CHANGE_HVD_ALLGATHER=0 (the "
                "default) stacks equal shapes, set PERSEUS_CHANGE_HVD_ALLGATHER=1 to concatenate along the first "
                "dimension as Horovod does".format(name, listing))
        active = check_agreement(records, "hvd.allgather", name, same_shape=not concatenate,
                                 same_trailing_shape=concatenate)
        rows = {r.rank: (r.shape[0] if concatenate else 1) for r in active}
        longest = max(r.shape[0] for r in active) if concatenate else None
        padded = source.contiguous()
        if concatenate and source.shape[0] < longest:
            padded = torch.cat([padded, padded.new_zeros((longest - source.shape[0],) + tuple(source.shape[1:]))])
        flat = _ops.allgather_flat(padded if padded.dim() else padded.reshape(1))

        def finish() -> torch.Tensor:
            assert flat.result is not None
            per_rank = flat.result.reshape((len(rows),) + tuple(padded.shape))
            if not concatenate:
                return per_rank.reshape((len(rows),) + tuple(source.shape))
            return torch.cat([per_rank[r][: rows[r]] for r in sorted(rows)])

        return _started(flat, finish)

    return _submit("hvd.allgather", name, row, start)


@on_process_set("hvd.allgather")
def allgather_async(tensor: torch.Tensor, name: Optional[str] = None, process_set: Any = global_process_set) -> int:
    return _allgather_start(tensor, name, process_set=process_set)


class _Allgather(torch.autograd.Function):
    """Horovod's HorovodAllgather: the gradient is this rank's part of the averaged output gradient."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str], concatenate: bool) -> torch.Tensor:
        ctx.world = _comm.current()  # the process set's world, for backward
        ctx.concatenate = concatenate
        ctx.dim = tensor.shape[0] if tensor.dim() else 1
        return synchronize(_allgather_start(tensor, name, concatenate))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Any:
        with _comm.using(ctx.world):
            grad_reduced = allreduce(grad_output, op=Average)
            rank = basics.rank()
            if not ctx.concatenate:
                return grad_reduced[rank], None, None
            dims = synchronize(_allgather_start(torch.tensor([ctx.dim], dtype=torch.int64), None, True))
            offset = int(dims[:rank].sum().item())
            return grad_reduced.narrow(0, offset, ctx.dim), None, None


@on_process_set("hvd.allgather")
def allgather(tensor: torch.Tensor, name: Optional[str] = None, process_set: Any = global_process_set) -> torch.Tensor:
    """All ranks' tensors: stacked on a new first dimension (PERSEUS_CHANGE_HVD_ALLGATHER=0, the default)
    or concatenated along the first dimension as Horovod does (PERSEUS_CHANGE_HVD_ALLGATHER=1); differentiable.

    Concatenation lets the first dimension differ between ranks; stacking needs equal shapes."""
    check_global(process_set, "hvd.allgather")
    return _Allgather.apply(tensor, name, perseus_config.get().change_hvd_allgather)


@on_process_set("hvd.grouped_allgather")
def grouped_allgather_async(tensors: List[torch.Tensor], name: Optional[str] = None,
                            process_set: Any = global_process_set) -> int:
    names = _group_names("grouped_allgather", name, len(tensors))
    return _grouped_start([_allgather_start(t, n, process_set=process_set) for t, n in zip(tensors, names)])


@on_process_set("hvd.grouped_allgather")
def grouped_allgather(tensors: List[torch.Tensor], name: Optional[str] = None,
                      process_set: Any = global_process_set) -> List[torch.Tensor]:
    """allgather of each of `tensors` (PERSEUS_CHANGE_HVD_ALLGATHER decides stacking or concatenation);
    differentiable."""
    check_global(process_set, "hvd.grouped_allgather")
    names = _group_names("grouped_allgather", name, len(tensors))
    concatenate = perseus_config.get().change_hvd_allgather
    return [_Allgather.apply(t, n, concatenate) for t, n in zip(tensors, names)]


# ---- broadcast --------------------------------------------------------------------------------

def _broadcast_start(tensor: torch.Tensor, output: torch.Tensor, root_rank: int, name: Optional[str],
                     process_set: Any = global_process_set) -> int:
    check_global(process_set, "hvd.broadcast")
    name = name or _control.auto_name("broadcast")
    world = basics.world()
    root_rank = set_root(root_rank, "hvd.broadcast")  # a global rank; in a process set, its index there
    if not 0 <= root_rank < world.size:
        raise ValueError("root_rank={} is not a rank of this job (0..{})".format(root_rank, world.size - 1))
    row = make_row(K_BROADCAST, name, tensor, root=root_rank, digest_=_digest(name))

    def start(records: List[Record]) -> _negotiation.Started:
        _refuse_joined(records, "hvd.broadcast", name)
        check_agreement(records, "hvd.broadcast", name)
        wire = output if output is tensor else tensor.detach().clone()
        wire = wire if wire.is_contiguous() else wire.contiguous()
        work = _ops.broadcast(wire if wire is not output else wire.detach(), root_rank)

        def finish() -> torch.Tensor:
            if wire is not output:
                with torch.no_grad():
                    output.copy_(wire)
            return output

        return _started(work, finish)

    return _submit("hvd.broadcast", name, row, start)


@on_process_set("hvd.broadcast")
def broadcast_async(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                    process_set: Any = global_process_set) -> int:
    return _broadcast_start(tensor, torch.empty_like(tensor), root_rank, name, process_set)


@on_process_set("hvd.broadcast")
def broadcast_async_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                     process_set: Any = global_process_set) -> int:
    return _broadcast_start(tensor, tensor, root_rank, name, process_set)


class _Broadcast(torch.autograd.Function):
    """Horovod's HorovodBroadcast: the gradient is the averaged output gradient on the root, 0 elsewhere."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, root_rank: int, name: Optional[str]) -> torch.Tensor:
        ctx.world = _comm.current()  # the process set's world, for backward
        ctx.root_rank = root_rank
        return synchronize(broadcast_async(tensor.detach(), root_rank, name))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Any:
        with _comm.using(ctx.world):
            grad_reduced = allreduce(grad_output, op=Average)
            if _comm.job().rank != ctx.root_rank:  # root_rank is a global rank
                grad_reduced = grad_reduced * 0
            return grad_reduced, None, None


@on_process_set("hvd.broadcast")
def broadcast(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
              process_set: Any = global_process_set) -> torch.Tensor:
    """A new tensor holding root_rank's `tensor` on every rank; differentiable."""
    check_global(process_set, "hvd.broadcast")
    return _Broadcast.apply(tensor, root_rank, name)


@on_process_set("hvd.broadcast")
def broadcast_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
               process_set: Any = global_process_set) -> torch.Tensor:
    """In place: `tensor` becomes root_rank's value."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# ---- reducescatter ------------------------------------------------------------------------------

def _reducescatter_start(tensor: torch.Tensor, name: Optional[str], op: int, prescale_factor: float,
                         postscale_factor: float, process_set: Any = global_process_set) -> int:
    check_global(process_set, "hvd.reducescatter")
    name = name or _control.auto_name("reducescatter")
    if op not in (Average, Sum):  # Horovod refuses these in the engine: a RuntimeError
        raise HorovodInternalError("hvd.reducescatter '{}': op must be hvd.Average or hvd.Sum (Horovod's "
                                   "reducescatter), got {}".format(name, _OP_NAMES.get(op, op)))
    if tensor.dim() == 0:
        raise ValueError("hvd.reducescatter '{}': the tensor needs at least one dimension (it is split along the "
                         "first)".format(name))
    source = _scale(tensor.detach(), prescale_factor)
    wide = source.to(torch.float64) if source.dtype in (torch.float16, torch.bfloat16) else source
    wire = wide.clone().contiguous() if wide is tensor or wide is source else wide.contiguous()
    row = make_row(K_REDUCESCATTER, name, wire, op=op, digest_=_digest(name))

    def start(records: List[Record]) -> _negotiation.Started:
        _refuse_joined(records, "hvd.reducescatter", name)
        check_agreement(records, "hvd.reducescatter", name)
        world = basics.world()
        work = _ops.allreduce(wire, _ops.SUM)
        sizes = _kit_ops.split_sizes(tensor.shape[0], world.size)
        offset = sum(sizes[: world.rank])
        post = _kit_ops.postscale_for(op, world.size, postscale_factor)

        def finish() -> torch.Tensor:
            mine = wire.narrow(0, offset, sizes[world.rank])
            return _scale(mine.to(tensor.dtype) if mine.dtype != tensor.dtype and tensor.dtype in _INTEGER else mine,
                          post).to(tensor.dtype).clone()

        return _started(work, finish)

    return _submit("hvd.reducescatter", name, row, start)


@on_process_set("hvd.reducescatter")
def reducescatter_async(tensor: torch.Tensor, name: Optional[str] = None, op: int = Average,
                        process_set: Any = global_process_set, prescale_factor: float = 1.0,
                        postscale_factor: float = 1.0) -> int:
    return _reducescatter_start(tensor, name, op, prescale_factor, postscale_factor, process_set)


class _Reducescatter(torch.autograd.Function):
    """Horovod's HorovodReducescatter: the gradient is the allgather of the output gradient (times size for
    Sum, and the scale factors)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str], op: int, prescale_factor: float,
                postscale_factor: float) -> torch.Tensor:
        ctx.world = _comm.current()  # the process set's world, for backward
        ctx.op, ctx.prescale_factor, ctx.postscale_factor = op, prescale_factor, postscale_factor
        return synchronize(_reducescatter_start(tensor, name, op, prescale_factor, postscale_factor))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Any:
        with _comm.using(ctx.world):
            grad = grad_output
            if ctx.op == Sum:
                grad = grad * basics.size()
            factor = ctx.prescale_factor * ctx.postscale_factor
            if factor != 1.0:
                grad = grad * factor
            return synchronize(_allgather_start(grad, None, True)), None, None, None, None


@on_process_set("hvd.reducescatter")
def reducescatter(tensor: torch.Tensor, name: Optional[str] = None, compression: Any = Compression.none,
                  op: int = Average, process_set: Any = global_process_set, prescale_factor: float = 1.0,
                  postscale_factor: float = 1.0) -> torch.Tensor:
    """This rank's part (split along the first dimension, the first ranks one row more) of the reduction of
    `tensor` over all ranks; differentiable."""
    check_global(process_set, "hvd.reducescatter")
    compressor = compression if compression is not None else Compression.none
    compressed, ctx = compressor.compress(tensor)
    out = _Reducescatter.apply(compressed, name, op, prescale_factor, postscale_factor)
    return compressor.decompress(out, ctx)


@on_process_set("hvd.grouped_reducescatter")
def grouped_reducescatter_async(tensors: List[torch.Tensor], name: Optional[str] = None, op: int = Average,
                                process_set: Any = global_process_set, prescale_factor: float = 1.0,
                                postscale_factor: float = 1.0) -> int:
    names = _group_names("grouped_reducescatter", name, len(tensors))
    return _grouped_start([_reducescatter_start(t, n, op, prescale_factor, postscale_factor, process_set)
                           for t, n in zip(tensors, names)])


@on_process_set("hvd.grouped_reducescatter")
def grouped_reducescatter(tensors: List[torch.Tensor], name: Optional[str] = None,
                          compression: Any = Compression.none, op: int = Average,
                          process_set: Any = global_process_set, prescale_factor: float = 1.0,
                          postscale_factor: float = 1.0) -> List[torch.Tensor]:
    check_global(process_set, "hvd.grouped_reducescatter")
    names = _group_names("grouped_reducescatter", name, len(tensors))
    return [reducescatter(t, n, compression, op, process_set, prescale_factor, postscale_factor)
            for t, n in zip(tensors, names)]


# ---- alltoall -------------------------------------------------------------------------------------

def _alltoall_start(tensor: torch.Tensor, splits: Any, name: Optional[str],
                    process_set: Any = global_process_set) -> int:
    check_global(process_set, "hvd.alltoall")
    name = name or _control.auto_name("alltoall")
    world = basics.world()
    source = tensor.detach()
    if source.dim() == 0:
        raise ValueError("hvd.alltoall '{}': the tensor needs at least one dimension (it is split along the "
                         "first)".format(name))
    if splits is None:
        if source.shape[0] % world.size:
            raise ValueError("hvd.alltoall '{}': the first dimension ({}) is not divisible by the number of ranks "
                             "({}); pass splits=".format(name, source.shape[0], world.size))
        send = [source.shape[0] // world.size] * world.size
    else:
        send = [int(s) for s in (splits.tolist() if torch.is_tensor(splits) else list(splits))]
        if len(send) != world.size or any(s < 0 for s in send):
            raise ValueError("hvd.alltoall '{}': splits must hold {} non-negative counts (one per rank), got {}".format(
                name, world.size, send))
        if sum(send) != source.shape[0]:
            raise ValueError("hvd.alltoall '{}': splits sum to {} but the first dimension is {}".format(
                name, sum(send), source.shape[0]))
    row = make_row(K_ALLTOALL, name, source, digest_=_digest(name))

    def start(records: List[Record]) -> _negotiation.Started:
        _refuse_joined(records, "hvd.alltoall", name)
        check_agreement(records, "hvd.alltoall", name, same_shape=False, same_trailing_shape=True)
        longest = max(r.shape[0] for r in records)
        padded = source.contiguous()
        if source.shape[0] < longest:
            padded = torch.cat([padded, padded.new_zeros((longest - source.shape[0],) + tuple(source.shape[1:]))])
        data = _ops.allgather_flat(padded)
        counts = _ops.allgather_flat(torch.tensor(send, dtype=torch.int64))
        me = world.rank

        def finish() -> Tuple[torch.Tensor, torch.Tensor]:
            assert data.result is not None and counts.result is not None
            table = counts.result.reshape(world.size, world.size).tolist()  # table[src][dst]
            per_rank = data.result.reshape((world.size,) + tuple(padded.shape))
            pieces = []
            for src in range(world.size):
                start = sum(table[src][:me])
                pieces.append(per_rank[src].narrow(0, start, table[src][me]))
            received = torch.tensor([table[src][me] for src in range(world.size)], dtype=torch.int32)
            return torch.cat(pieces).to(tensor.device), received

        return _started([data, counts], finish)

    return _submit("hvd.alltoall", name, row, start)


@on_process_set("hvd.alltoall")
def alltoall_async(tensor: torch.Tensor, splits: Any = None, name: Optional[str] = None,
                   process_set: Any = global_process_set) -> int:
    return _alltoall_start(tensor, splits, name, process_set)


class _Alltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, splits: Any, name: Optional[str]) -> Any:
        ctx.world = _comm.current()  # the process set's world, for backward
        output, received = synchronize(_alltoall_start(tensor, splits, name))
        ctx.received = received
        if splits is None:
            return output
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor, *dead: Any) -> Any:
        with _comm.using(ctx.world):
            grad, _ = synchronize(_alltoall_start(grad_output, ctx.received, None))
            return grad, None, None


@on_process_set("hvd.alltoall")
def alltoall(tensor: torch.Tensor, splits: Any = None, name: Optional[str] = None,
             process_set: Any = global_process_set) -> Any:
    """Rows of `tensor` sent to each rank (splits[r] rows to rank r, else equal parts); returns the rows received
    in rank order, and with splits= also how many came from each rank. Differentiable."""
    check_global(process_set, "hvd.alltoall")
    return _Alltoall.apply(tensor, splits, name)


# ---- join and barrier -------------------------------------------------------------------------

# Steps of DistributedOptimizers that a joined rank can take part in, by plan digest.
_step_participants: Dict[int, Callable[[], None]] = {}


def register_step_participant(digest: int, run_zero_step: Callable[[], None]) -> None:
    _step_participants[digest] = run_zero_step


def announce_step(digest: int, name: str) -> None:
    """Called by DistributedOptimizer.synchronize(): lets joined ranks take part in this step's allreduces."""
    records = _control.exchange(K_STEP, name, digest=digest)
    check_agreement(records, "hvd.DistributedOptimizer", name, same_shape=False)


def _take_part(record: Record) -> None:
    """A joined rank's share of the collective `record` describes (zeros in, results dropped). The other
    ranks refuse allgather, broadcast, reducescatter and alltoall while a rank has joined (as Horovod does)."""
    if record.kind == K_ALLREDUCE:
        assert record.dtype is not None and record.shape is not None
        zeros = torch.zeros(record.shape, dtype=record.dtype)
        _ops.allreduce(zeros, _TORCH_OPS.get(record.op, _ops.SUM)).wait()
    elif record.kind == K_STEP:
        participant = _step_participants.get(record.digest)
        if participant is None:
            raise HorovodCollectiveError("hvd.join(): the other ranks run an optimizer step of a DistributedOptimizer "
                                         "this rank does not have ('{}')".format(record.name))
        participant()
    elif record.kind == K_BROADCAST_MANY:
        raise HorovodCollectiveError("hvd.join(): ranks broadcast parameters while this rank has joined; "
                                     "call broadcast_parameters() before hvd.join()")


def _joined_share(records: List[Record]) -> None:
    """What a rank inside hvd.join() does for a collective every active rank has (their records)."""
    first = _active(records)[0]
    if first.kind in (K_ALLGATHER, K_BROADCAST, K_REDUCESCATTER, K_ALLTOALL, K_BARRIER):
        return  # a barrier counts joined ranks as arrived; the others are refused by the active ranks
    check_agreement(records, "hvd.join", first.name, same_shape=True)
    _take_part(first)


_control.joined_hook = _joined_share


def join(device: int = -1) -> int:
    """This rank has no more data: take part (with zeros) in the others' allreduces until every rank joined.

    Returns the rank that joined last. An Average divides by all ranks, joined ones included."""
    join_round = _control.rounds
    while True:
        records = _control.exchange_joined(join_round)
        if not _active(records):
            last = max(records, key=lambda r: (r.join_round, r.rank))
            return last.rank


@on_process_set("hvd.barrier")
def barrier(process_set: Any = global_process_set) -> None:
    """Block until every rank reached the barrier (joined ranks count as arrived)."""
    check_global(process_set, "hvd.barrier")
    records = _control.exchange(K_BARRIER, "barrier", digest=_digest("barrier"))
    check_agreement(records, "hvd.barrier", "barrier", same_shape=False)


__all__ = [
    "Adasum", "Average", "Max", "Min", "Product", "Sum", "HorovodCollectiveError", "HorovodInternalError",
    "allgather", "allgather_async", "allreduce", "allreduce_", "allreduce_async", "allreduce_async_", "alltoall",
    "alltoall_async", "barrier", "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "grouped_allgather", "grouped_allgather_async", "grouped_allreduce", "grouped_allreduce_",
    "grouped_allreduce_async", "grouped_allreduce_async_", "grouped_reducescatter", "grouped_reducescatter_async",
    "join", "poll", "reducescatter", "reducescatter_async", "sparse_allreduce_async", "synchronize", "Compressor",
    "global_process_set",
]
