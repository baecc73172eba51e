"""Horovod collectives (allreduce, allgather, broadcast, their async forms, join, barrier) on perseus's engine.

Every call first exchanges a small fixed-size record (operation, name, dtype, shape, root, op) among
all ranks (an engine allgather). All ranks then check the same table, so a mismatch (another
shape under one name, another operation, another root) raises the same clear error on every rank
instead of crashing or hanging, and a rank inside hvd.join() learns which collective to take part in.
Unlike Horovod, ranks must submit collectives in the same order (there is no reordering negotiation).
"""

import hashlib
import itertools
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from perseus import config as perseus_config
from perseus.torch import _control as _ops
from perseus.torch.horovod import basics
from perseus.torch.horovod.compression import Compression, Compressor


class HorovodCollectiveError(RuntimeError):
    """Ranks disagree about a collective (the message names the tensor and what differs)."""


# Horovod's reduction operators (hvd.Average, hvd.Sum, ...) are plain ints, as in Horovod.
Average = 0
Sum = 1
Adasum = 2
Min = 3
Max = 4
Product = 5

_OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max", Product: "Product"}
_TORCH_OPS = {Average: _ops.SUM, Sum: _ops.SUM, Min: _ops.MIN, Max: _ops.MAX,
              Product: _ops.PRODUCT}

# Record layout (int64 each)
KIND, JOINED, JOIN_ROUND, DTYPE, NDIM, SHAPE = 0, 1, 2, 3, 4, 5
MAX_DIMS = 8
ROOT = SHAPE + MAX_DIMS  # 13
OP = ROOT + 1
DIGEST = OP + 1
NAME = DIGEST + 1  # 16
NAME_WORDS = 7
RECORD_LEN = NAME + NAME_WORDS  # 23

K_ALLREDUCE, K_ALLGATHER, K_BROADCAST, K_JOIN, K_BARRIER, K_STEP, K_BROADCAST_MANY = 1, 2, 3, 4, 5, 6, 7
_KIND_NAMES = {K_ALLREDUCE: "allreduce", K_ALLGATHER: "allgather", K_BROADCAST: "broadcast", K_JOIN: "join",
               K_BARRIER: "barrier", K_STEP: "optimizer step", K_BROADCAST_MANY: "broadcast_parameters"}

_DTYPES: List[torch.dtype] = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.uint8, torch.int8,
                              torch.int16, torch.int32, torch.int64, torch.bool]


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def _name_words(name: str) -> List[int]:
    raw = name.encode()[: NAME_WORDS * 8].ljust(NAME_WORDS * 8, b"\0")
    return [int.from_bytes(raw[i: i + 8], "little", signed=True) for i in range(0, len(raw), 8)]


def _name_of(words: Sequence[int]) -> str:
    raw = b"".join(int(w).to_bytes(8, "little", signed=True) for w in words)
    return raw.rstrip(b"\0").decode(errors="replace")


@dataclass
class Record:
    rank: int
    kind: int
    joined: bool
    join_round: int
    dtype: Optional[torch.dtype]
    shape: Optional[Tuple[int, ...]]
    root: int
    op: int
    digest: int
    name: str

    def describe(self) -> str:
        what = _KIND_NAMES.get(self.kind, "operation {}".format(self.kind))
        return "{} '{}'".format(what, self.name) if self.name else what


class _Control:
    """The record exchange (one allgather of RECORD_LEN int64 per rank per collective)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.rounds = 0
        self.counters: Dict[str, itertools.count] = {}

    def auto_name(self, kind: str) -> str:
        counter = self.counters.setdefault(kind, itertools.count())
        return "{}.noname.{}".format(kind, next(counter))

    def exchange(self, kind: int, name: str = "", tensor: Optional[torch.Tensor] = None, root: int = -1,
                 op: int = -1, digest: int = 0, joined: bool = False, join_round: int = -1,
                 shape: Optional[Sequence[int]] = None, dtype: Optional[torch.dtype] = None) -> List[Record]:
        world = basics.world()
        record = torch.full((RECORD_LEN,), -1, dtype=torch.int64)
        record[KIND], record[JOINED], record[JOIN_ROUND] = kind, int(joined), join_round
        if tensor is not None:
            shape, dtype = tuple(tensor.shape), tensor.dtype
        if dtype is not None:
            record[DTYPE] = _DTYPES.index(dtype) if dtype in _DTYPES else 100 + hash(str(dtype)) % 1000
        if shape is not None:
            if len(shape) > MAX_DIMS:
                raise ValueError("perseus collectives take tensors of at most {} dimensions, '{}' has {}".format(
                    MAX_DIMS, name, len(shape)))
            record[NDIM] = len(shape)
            for i, extent in enumerate(shape):
                record[SHAPE + i] = extent
        record[ROOT], record[OP], record[DIGEST] = root, op, digest
        record[NAME: NAME + NAME_WORDS] = torch.tensor(_name_words(name), dtype=torch.int64)
        gathered = [torch.empty_like(record) for _ in range(world.size)]
        with self.lock:
            _ops.allgather(gathered, record).wait()
            self.rounds += 1
        return [self._decode(r, row.tolist()) for r, row in enumerate(gathered)]

    @staticmethod
    def _decode(rank: int, row: List[int]) -> Record:
        ndim = row[NDIM]
        code = row[DTYPE]
        return Record(
            rank=rank, kind=row[KIND], joined=bool(row[JOINED]), join_round=row[JOIN_ROUND],
            dtype=_DTYPES[code] if 0 <= code < len(_DTYPES) else None,
            shape=tuple(row[SHAPE: SHAPE + ndim]) if ndim >= 0 else None,
            root=row[ROOT], op=row[OP], digest=row[DIGEST], name=_name_of(row[NAME: NAME + NAME_WORDS]))


_control = _Control()


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


def _scaled_op(op: Optional[int], average: Optional[bool]) -> int:
    if op is not None and average is not None:
        raise ValueError("pass either op= or the deprecated average=, not both")
    if op is None:
        return Sum if average is False else Average
    if op not in _OP_NAMES:
        raise ValueError("op={!r} is not a Horovod reduction: use hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max "
                         "or hvd.Product".format(op))
    return op


# ---- handles for the async forms -------------------------------------------------------------

@dataclass
class _Pending:
    work: Any  # a torch.distributed Work, or None when the result is ready
    finish: Callable[[], torch.Tensor]


_handles: Dict[int, _Pending] = {}
_handle_ids = itertools.count(1)
_handles_lock = threading.Lock()


def _register(work: Any, finish: Callable[[], torch.Tensor]) -> int:
    with _handles_lock:
        handle = next(_handle_ids)
        _handles[handle] = _Pending(work, finish)
    return handle


def poll(handle: int) -> bool:
    """Whether the async operation of `handle` has finished (synchronize() will not block)."""
    with _handles_lock:
        pending = _handles.get(handle)
    if pending is None:
        raise ValueError("handle {} is unknown or already synchronized".format(handle))
    return pending.work is None or bool(pending.work.is_completed())


def synchronize(handle: int) -> torch.Tensor:
    """Wait for the async operation of `handle`; returns its output tensor."""
    with _handles_lock:
        pending = _handles.pop(handle, None)
    if pending is None:
        raise ValueError("handle {} is unknown or already synchronized".format(handle))
    if pending.work is not None:
        pending.work.wait()
    return pending.finish()


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
                     compression: Any, prescale_factor: float, postscale_factor: float) -> int:
    name = name or _control.auto_name("allreduce")
    if tensor.is_sparse:
        raise ValueError("not supported: allreduce of sparse tensor '{}'; pass tensor.to_dense()".format(name))
    compressor = compression if compression is not None else Compression.none
    if op == Adasum:
        wire, ctx = tensor, None
    else:
        source = tensor * prescale_factor if prescale_factor != 1.0 else tensor
        wire, ctx = compressor.compress(source)
        wire = (wire.clone() if wire is tensor else wire).contiguous()
    # the record carries what goes on the wire, so that a joined rank sends zeros of that dtype
    records = _control.exchange(K_ALLREDUCE, name, wire, op=op, digest=_digest(name))
    active = check_agreement(records, "hvd.allreduce", name)
    joined = len(records) - len(active)
    if joined and op in (Min, Max, Product, Adasum):
        raise HorovodCollectiveError("hvd.allreduce '{}': {} cannot run while {} rank(s) have called hvd.join() "
                                     "(a joined rank contributes zeros)".format(name, _OP_NAMES[op], joined))
    world = basics.world()
    if op == Adasum:
        return _adasum_start(tensor, output, name, prescale_factor, postscale_factor, world)
    work = _ops.allreduce(wire, _TORCH_OPS[op])

    def finish() -> torch.Tensor:
        result = compressor.decompress(wire, ctx)
        if op == Average:
            result = result / world.size
        if postscale_factor != 1.0:
            result = result * postscale_factor
        output.copy_(result.reshape(output.shape))
        return output

    return _register(work, finish)


def _adasum_start(tensor: torch.Tensor, output: torch.Tensor, name: str, prescale: float, postscale: float,
                  world: Any) -> int:
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

    return _register(work, finish)


def allreduce_async(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
                    op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                    compression: Any = None) -> int:
    op = _scaled_op(op, average)
    return _allreduce_start(tensor, torch.empty_like(tensor), name, op, compression, prescale_factor, postscale_factor)


def allreduce_async_(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
                     op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> int:
    op = _scaled_op(op, average)
    return _allreduce_start(tensor, tensor, name, op, None, prescale_factor, postscale_factor)


def allreduce(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
              compression: Any = Compression.none, op: Optional[int] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0) -> torch.Tensor:
    """A new tensor: the reduction (default: average) of `tensor` over all ranks."""
    op = _scaled_op(op, average)
    return synchronize(_allreduce_start(tensor, torch.empty_like(tensor), name, op, compression, prescale_factor,
                                        postscale_factor))


def allreduce_(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
               op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> torch.Tensor:
    """In place: `tensor` becomes the reduction over all ranks."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor))


# ---- allgather --------------------------------------------------------------------------------

def _allgather_start(tensor: torch.Tensor, name: Optional[str]) -> int:
    name = name or _control.auto_name("allgather")
    concatenate = perseus_config.get().change_hvd_allgather
    source = tensor.reshape(1) if (concatenate and tensor.dim() == 0) else tensor
    records = _control.exchange(K_ALLGATHER, name, source, digest=_digest(name))
    active = check_agreement(records, "hvd.allgather", name, same_shape=not concatenate,
                             same_trailing_shape=concatenate)
    world = basics.world()
    rows = {r.rank: (r.shape[0] if concatenate else 1) for r in active}
    longest = max(r.shape[0] for r in active) if concatenate else None
    padded = source.contiguous()
    if concatenate and source.shape[0] < longest:
        padded = torch.cat([padded, padded.new_zeros((longest - source.shape[0],) + tuple(source.shape[1:]))])
    gathered = [torch.empty_like(padded) for _ in range(world.size)]
    work = _ops.allgather(gathered, padded)

    def finish() -> torch.Tensor:
        pieces = [gathered[r][: rows[r]] if concatenate else gathered[r] for r in sorted(rows)]
        return torch.cat(pieces) if concatenate else torch.stack(pieces)

    return _register(work, finish)


def allgather_async(tensor: torch.Tensor, name: Optional[str] = None) -> int:
    return _allgather_start(tensor, name)


def allgather(tensor: torch.Tensor, name: Optional[str] = None) -> torch.Tensor:
    """All ranks' tensors: stacked on a new first dimension (PERSEUS_CHANGE_HVD_ALLGATHER=0, the default)
    or concatenated along the first dimension as Horovod does (PERSEUS_CHANGE_HVD_ALLGATHER=1).

    Concatenation lets the first dimension differ between ranks; stacking needs equal shapes."""
    return synchronize(_allgather_start(tensor, name))


# ---- broadcast --------------------------------------------------------------------------------

def _broadcast_start(tensor: torch.Tensor, output: torch.Tensor, root_rank: int, name: Optional[str]) -> int:
    name = name or _control.auto_name("broadcast")
    world = basics.world()
    if not 0 <= root_rank < world.size:
        raise ValueError("root_rank={} is not a rank of this job (0..{})".format(root_rank, world.size - 1))
    records = _control.exchange(K_BROADCAST, name, tensor, root=root_rank, digest=_digest(name))
    check_agreement(records, "hvd.broadcast", name)
    if records[root_rank].joined:
        raise HorovodCollectiveError("hvd.broadcast '{}': the root rank {} has called hvd.join()".format(name, root_rank))
    wire = output if output is tensor else tensor.clone()
    wire = wire if wire.is_contiguous() else wire.contiguous()
    work = _ops.broadcast(wire, root_rank)

    def finish() -> torch.Tensor:
        if wire is not output:
            output.copy_(wire)
        return output

    return _register(work, finish)


def broadcast_async(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None) -> int:
    return _broadcast_start(tensor, torch.empty_like(tensor), root_rank, name)


def broadcast_async_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None) -> int:
    return _broadcast_start(tensor, tensor, root_rank, name)


def broadcast(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None) -> torch.Tensor:
    """A new tensor holding root_rank's `tensor` on every rank."""
    return synchronize(broadcast_async(tensor, root_rank, name))


def broadcast_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None) -> torch.Tensor:
    """In place: `tensor` becomes root_rank's value."""
    return synchronize(broadcast_async_(tensor, root_rank, name))


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
    """A joined rank's share of the collective `record` describes (zeros in, results dropped)."""
    world = basics.world()
    if record.kind == K_ALLREDUCE:
        assert record.dtype is not None and record.shape is not None
        zeros = torch.zeros(record.shape, dtype=record.dtype)
        _ops.allreduce(zeros, _TORCH_OPS.get(record.op, _ops.SUM)).wait()
    elif record.kind == K_ALLGATHER:
        assert record.dtype is not None and record.shape is not None
        zeros = torch.zeros(record.shape, dtype=record.dtype)
        _ops.allgather_flat(zeros).wait()
    elif record.kind == K_BROADCAST:
        assert record.dtype is not None and record.shape is not None
        _ops.broadcast(torch.empty(record.shape, dtype=record.dtype), record.root).wait()
    elif record.kind == K_STEP:
        participant = _step_participants.get(record.digest)
        if participant is None:
            raise HorovodCollectiveError("hvd.join(): the other ranks run an optimizer step of a DistributedOptimizer "
                                         "this rank does not have ('{}')".format(record.name))
        participant()
    elif record.kind == K_BROADCAST_MANY:
        raise HorovodCollectiveError("hvd.join(): ranks broadcast parameters while this rank has joined; "
                                     "call broadcast_parameters() before hvd.join()")


def _agreeing_record(active: List[Record]) -> Record:
    # Shapes of an allgather may differ by rank: size the joined rank's zeros like the longest.
    first = active[0]
    if first.kind == K_ALLGATHER and first.shape:
        longest = max(r.shape[0] for r in active if r.shape)
        return Record(first.rank, first.kind, False, -1, first.dtype, (longest,) + tuple(first.shape[1:]),
                      first.root, first.op, first.digest, first.name)
    return first


def join(device: int = -1) -> int:
    """This rank has no more data: take part (with zeros) in the others' collectives until every rank joined.

    Returns the rank that joined last. An Average divides by all ranks, joined ones included."""
    join_round = _control.rounds
    while True:
        records = _control.exchange(K_JOIN, "join", joined=True, join_round=join_round)
        active = _active(records)
        if not active:
            last = max(records, key=lambda r: (r.join_round, r.rank))
            return last.rank
        check_agreement(records, "hvd.join", active[0].name, same_shape=active[0].kind != K_ALLGATHER,
                        same_trailing_shape=active[0].kind == K_ALLGATHER)
        _take_part(_agreeing_record(active))


def barrier() -> None:
    """Block until every rank reached the barrier (joined ranks count as arrived)."""
    records = _control.exchange(K_BARRIER, "barrier", digest=_digest("barrier"))
    check_agreement(records, "hvd.barrier", "barrier", same_shape=False)


__all__ = [
    "Adasum", "Average", "Max", "Min", "Product", "Sum", "HorovodCollectiveError", "allgather", "allgather_async",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_", "barrier", "broadcast", "broadcast_",
    "broadcast_async", "broadcast_async_", "join", "poll", "synchronize", "Compressor",
]
