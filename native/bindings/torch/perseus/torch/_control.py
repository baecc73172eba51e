"""Collectives on torch tensors over the engine, for the Horovod API and perseus's own bookkeeping (perf
check, SyncBatchNorm): each returns a Work (wait(), is_completed()) as torch.distributed's do.

Names: the n-th call of a kind on this rank is "<kind>.<n>", so ranks must issue these calls in the same
order (the Horovod API exchanges a record before each collective, which checks it). Exactness: an fp32
allreduce travels as fp64 here (sum exact to fp32 rounding), never through the engine's fp16 gradient wire
policy: hvd.allreduce applies exactly the compression= it is given. Min, Max and Product are an allgather
and a local reduction (the engine reduces by sum). bool/int8/int16 travel widened (int64/int32).
CUDA tensors take the engine's device path (widened on the device) for allreduce and broadcast; an allgather
goes through host memory (the device path has none).
"""

import ctypes
from typing import Any, Callable, List, Optional

import torch

from perseus import engine as native
from perseus.engine import _buffers
from perseus.torch import _comm, _device

SUM, MIN, MAX, PRODUCT = "sum", "min", "max", "product"
_WIDE = {torch.float32: torch.float64, torch.bool: torch.int64, torch.int8: torch.int32, torch.int16: torch.int32}
_BYTES_ONLY = (torch.bool, torch.int8, torch.int16)


class Work:
    """A collective under way; wait() raises its error and runs what completes it. `after`: the Work this one
    completes with (is_completed() asks it; a Work with neither a handle nor `after` is complete)."""

    def __init__(self, handle: Optional[Any], finish: Callable[[Any], None], after: Optional["Work"] = None) -> None:
        self._handle = handle
        self._finish = finish
        self._after = after
        self._done = False

    def is_completed(self) -> bool:
        if self._done:
            return True
        if self._after is not None:
            return self._after.is_completed()
        return self._handle is None or self._handle.poll()

    def wait(self) -> bool:
        if not self._done:
            result = self._handle.wait() if self._handle is not None else None
            self._finish(result)
            self._done = True
        return True


def _world() -> _comm.World:
    found = _comm.current()
    if found is None:
        raise _comm.PerseusWorldError("perseus is not initialised: call hvd.init() first")
    return found


def allreduce(tensor: torch.Tensor, op: str = SUM) -> Work:
    """In place over all ranks."""
    world = _world()
    if op != SUM:
        return _reduce_by_allgather(world, tensor, op)
    wide = _WIDE.get(tensor.dtype)
    name = world.next_name("perseus.allreduce")
    if tensor.is_cuda:  # the device path, widened on the device as the host path widens
        wire = tensor.detach().to(wide or tensor.dtype, copy=True).contiguous() if (
            wide is not None or not tensor.is_contiguous()) else tensor
        handle = world.allreduce_any(name, wire, "sum")
    else:
        wire = tensor.detach().to("cpu", wide or tensor.dtype, copy=True).contiguous() if (
            wide is not None or not tensor.is_contiguous()) else tensor
        handle = world.engine.allreduce_async(name, _comm.buffer_of(wire), op="sum")

    def finish(_: Any) -> None:
        if wire is not tensor:
            tensor.copy_(wire.view(tensor.shape).to(tensor.dtype))
    return Work(handle, finish)


def _raw_bytes(host: torch.Tensor, rows: int) -> _buffers.Buffer:
    """A contiguous host tensor of a dtype the engine has no name for, as (rows, bytes per row) uint8."""
    row = host.element_size()
    for d in host.shape[1:]:
        row *= int(d)
    nbytes = host.numel() * host.element_size()
    return _buffers.raw(host.data_ptr() if nbytes else 0, "uint8", (rows, row), host)


def broadcast(tensor: torch.Tensor, root: int) -> Work:
    world = _world()
    name = world.next_name("perseus.broadcast")
    if tensor.is_cuda:  # the device path: the tensor's bytes, from root's GPU to every rank's
        wire = tensor if tensor.is_contiguous() else tensor.detach().contiguous()
        submission = _device.broadcast(world.engine, world.feeder, name, wire, root)

        def copy_back(_: Any) -> None:
            if wire is not tensor:
                tensor.copy_(wire)
        return Work(submission, copy_back)
    staged = _comm.Staged(tensor)
    rows = staged.host.shape[0] if staged.host.dim() else 1  # every row's bytes (the first row only, once)
    buf = _raw_bytes(staged.host, rows) if tensor.dtype in _BYTES_ONLY else _comm.buffer_of(staged.host)
    handle = world.engine.broadcast_async(name, buf, root)

    def finish(_: Any) -> None:
        staged.finish()
    return Work(handle, finish)


def _tensor_from(data: bytearray, dtype: torch.dtype, shape: Any) -> torch.Tensor:
    """A new tensor holding `data` (ctypes copy: no numpy, no torch.frombuffer, which old torch lacks)."""
    out = torch.empty(shape, dtype=dtype)
    if len(data):
        ctypes.memmove(out.data_ptr(), (ctypes.c_char * len(data)).from_buffer(data), len(data))
    return out


def allgather_flat(tensor: torch.Tensor) -> "GatherWork":
    """Every rank's tensor concatenated along the first dimension (sizes may differ by rank)."""
    world = _world()
    source = tensor.detach()
    if source.dim() == 0:
        source = source.reshape(1)
    host = source.to("cpu").contiguous()
    send = _raw_bytes(host, host.shape[0]) if host.dtype in _BYTES_ONLY else _comm.buffer_of(host)
    handle = world.engine.allgather_async(world.next_name("perseus.allgather"), send)
    return GatherWork(handle, host, tensor.device)


class GatherWork(Work):
    def __init__(self, handle: native.Handle, host: torch.Tensor, device: torch.device) -> None:
        super().__init__(handle, self._take)
        self.host = host
        self.device = device
        self.result: Optional[torch.Tensor] = None
        self.first_dims: List[int] = []

    def _take(self, result: Any) -> None:
        data, dims = result
        self.first_dims = [int(d) for d in dims]
        shape = (sum(self.first_dims),) + tuple(self.host.shape[1:])
        self.result = _tensor_from(data, self.host.dtype, shape).to(self.device)


def allgather(outputs: List[torch.Tensor], tensor: torch.Tensor) -> Work:
    """torch.distributed's form: outputs[r] receives rank r's tensor (equal shapes)."""
    work = allgather_flat(tensor)

    def finish(_: Any) -> None:
        work.wait()
        assert work.result is not None
        for out, piece in zip(outputs, work.result.reshape((len(outputs),) + tuple(tensor.shape)).unbind(0)):
            out.copy_(piece)
    return Work(None, finish, after=work)


def _reduce_by_allgather(world: _comm.World, tensor: torch.Tensor, op: str) -> Work:
    work = allgather_flat(tensor.reshape(1, -1) if tensor.dim() else tensor.reshape(1, 1))

    def finish(_: Any) -> None:
        work.wait()
        assert work.result is not None
        rows = work.result.reshape(world.size, -1)
        if op == MIN:
            out = rows.min(dim=0).values
        elif op == MAX:
            out = rows.max(dim=0).values
        else:
            out = rows.prod(dim=0) if rows.dtype != torch.bool else rows.all(dim=0)
        tensor.copy_(out.reshape(tensor.shape))
    return Work(None, finish, after=work)


def barrier() -> None:
    world = _world()
    world.engine.barrier(world.next_name("perseus.barrier"))
