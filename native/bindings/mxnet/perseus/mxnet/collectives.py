"""Horovod's MXNet collectives on the perseus engine, with Horovod 0.28's signatures: allreduce(_),
grouped_allreduce(_), allgather, grouped_allgather, broadcast(_), alltoall, reducescatter, grouped_reducescatter.

They are the kit's (perseus.horovod_kit.host_collectives: exact, Horovod's semantics); this module gives only the
NDArray conversion, and the gradient path of DistributedTrainer / DistributedOptimizer / the KVStore, which takes
the engine's wire policy (fp16 on the wire by default) instead of the exact one.

A GPU NDArray (context mx.gpu(i)) of a CUDA wheel takes the engine's device path (_device.py) for allreduce with
Sum or Average and for broadcast: the host path's arithmetic (fp32 summed as fp64, the scaling, the average) in
MXNet operations on the device, the collective on the NDArray's device memory. Everything else (allgather,
alltoall, reducescatter, Min/Max/Product) is staged through the host: the engine's device path has no allgather.
Host NDArrays take the kit's path unchanged.
"""
from typing import Any, List, Sequence

import numpy as np

from perseus.horovod_kit import host_collectives as _host
from perseus.horovod_kit.host_collectives import ENGINE_DTYPES as _ENGINE_DTYPES, FLOATS as _FLOATS
from perseus.horovod_kit.host_collectives import WIDENED
from perseus.horovod_kit.ops import Adasum, Average, Max, Min, Product, Sum  # noqa: F401 (perseus.mxnet's names)

from . import _device, _world
from .process_sets import Group, global_process_set


class _NDArrays(object):
    """NDArray <-> host array."""

    def to_host(self, tensor):
        # type: (Any) -> np.ndarray
        return tensor.asnumpy()  # a fresh copy; a 0-d NDArray stays 0-d (np.ascontiguousarray would not)

    def from_host(self, host, like):
        # type: (np.ndarray, Any) -> Any
        import mxnet as mx

        return mx.nd.array(host, ctx=like.context, dtype=host.dtype)

    def assign(self, tensor, host):
        # type: (Any, np.ndarray) -> Any
        """Through the engine's copy: `tensor[:] = host` cannot write an NDArray in an MKLDNN layout (a
        hybridized convolution's weights after a forward pass)."""
        self.from_host(host, tensor).copyto(tensor)
        return tensor

    def refusal(self, message):
        # type: (str) -> Exception
        """The exception type Horovod's MXNet ops raise for a collective they refuse (a RuntimeError)."""
        from mxnet.base import MXNetError
        return MXNetError(message)


class _Collectives(_host.HostCollectives):
    """The kit's collectives; allreduce (Sum, Average) and broadcast of GPU NDArrays on the device path."""

    def _reduced(self, tensor, reduction, name, prescale_factor, postscale_factor, group):
        # type: (Any, int, str, float, float, Group) -> Any
        """A new NDArray: reduce_host's result, on the device for a GPU NDArray and Sum / Average."""
        if reduction not in (Sum, Average) or not _device.on_device(tensor):
            host = _host.reduce_host(self.to_host(tensor), reduction, name, prescale_factor, postscale_factor, group)
            return self.conversion.from_host(host, tensor)
        dtype = _device.dtype_name(tensor, _host.REDUCIBLE, self.framework)
        wide = WIDENED.get(dtype, dtype)
        wire = _host.scale(tensor, prescale_factor).astype(wide, copy=True)  # the engine writes it: never `tensor`
        _device.allreduce_async(group.engine, name, wire, "sum", wide).wait()
        out = wire.astype(dtype, copy=False)
        if reduction == Average:
            out = _host.divide(out, group.size)
        return _host.scale(out, postscale_factor)

    def _grouped(self, tensors, average, name, prescale_factor, postscale_factor, process_set, op, kind):
        # type: (Sequence[Any], Any, Any, float, float, Any, Any, str) -> List[Any]
        reduction, group = self._reduction(op, average), Group(process_set, "hvd." + kind)
        names = self.group_names(kind, name, len(tensors), group) if kind.startswith("grouped") else \
            [self.name(kind, name, group)]
        return [self._reduced(t, reduction, n, prescale_factor, postscale_factor, group)
                for t, n in zip(tensors, names)]

    def allreduce(self, tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=global_process_set, op=None):
        # type: (Any, Any, Any, int, float, float, Any, Any) -> Any
        if not _device.on_device(tensor):
            return super(_Collectives, self).allreduce(tensor, average, name, priority, prescale_factor,
                                                       postscale_factor, process_set, op)
        return self._grouped([tensor], average, name, prescale_factor, postscale_factor, process_set, op,
                             "allreduce")[0]

    def allreduce_(self, tensor, average=None, name=None, priority=0, prescale_factor=1.0, postscale_factor=1.0,
                   process_set=global_process_set, op=None):
        # type: (Any, Any, Any, int, float, float, Any, Any) -> Any
        if not _device.on_device(tensor):
            return super(_Collectives, self).allreduce_(tensor, average, name, priority, prescale_factor,
                                                        postscale_factor, process_set, op)
        self._grouped([tensor], average, name, prescale_factor, postscale_factor, process_set, op,
                      "allreduce")[0].copyto(tensor)
        return tensor

    def grouped_allreduce(self, tensors, average=None, name=None, priority=0, prescale_factor=1.0,
                          postscale_factor=1.0, process_set=global_process_set, op=None):
        # type: (Sequence[Any], Any, Any, int, float, float, Any, Any) -> List[Any]
        if not any(_device.on_device(t) for t in tensors):
            return super(_Collectives, self).grouped_allreduce(tensors, average, name, priority, prescale_factor,
                                                               postscale_factor, process_set, op)
        return self._grouped(tensors, average, name, prescale_factor, postscale_factor, process_set, op,
                             "grouped_allreduce")

    def grouped_allreduce_(self, tensors, average=None, name=None, priority=0, prescale_factor=1.0,
                           postscale_factor=1.0, process_set=global_process_set, op=None):
        # type: (Sequence[Any], Any, Any, int, float, float, Any, Any) -> List[Any]
        if not any(_device.on_device(t) for t in tensors):
            return super(_Collectives, self).grouped_allreduce_(tensors, average, name, priority, prescale_factor,
                                                                postscale_factor, process_set, op)
        outs = self._grouped(tensors, average, name, prescale_factor, postscale_factor, process_set, op,
                             "grouped_allreduce")
        for out, t in zip(outs, tensors):
            out.copyto(t)
        return list(tensors)

    def broadcast_(self, tensor, root_rank, name=None, priority=0, process_set=global_process_set):
        # type: (Any, int, Any, int, Any) -> Any
        """In place; a GPU NDArray's bytes from root's device memory to every rank's."""
        if not _device.on_device(tensor):
            return super(_Collectives, self).broadcast_(tensor, root_rank, name, priority, process_set)
        _device.dtype_name(tensor, _host.MOVABLE, self.framework)
        group = Group(process_set, "hvd.broadcast")
        _device.broadcast_async(group.engine, self.name("broadcast", name, group), tensor,
                                group.root(root_rank)).wait()
        return tensor

    def broadcast(self, tensor, root_rank, name=None, priority=0, process_set=global_process_set):
        # type: (Any, int, Any, int, Any) -> Any
        if not _device.on_device(tensor):
            return super(_Collectives, self).broadcast(tensor, root_rank, name, priority, process_set)
        return self.broadcast_(tensor.copy(), root_rank, name, priority, process_set)


_api = _Collectives(_NDArrays(), "perseus.mxnet")
allreduce = _api.allreduce
allreduce_ = _api.allreduce_
grouped_allreduce = _api.grouped_allreduce
grouped_allreduce_ = _api.grouped_allreduce_
broadcast = _api.broadcast
broadcast_ = _api.broadcast_
allgather = _api.allgather
grouped_allgather = _api.grouped_allgather
alltoall = _api.alltoall
reducescatter = _api.reducescatter
grouped_reducescatter = _api.grouped_reducescatter

# for perseus.mxnet's other modules (objects, KVStore, trainer)
_name = _api.name
to_host = _api.to_host
from_host = _api.conversion.from_host
assign = _api.conversion.assign
scale = _host.scale
reduce_host = _host.reduce_host
allgather_host = _host.allgather_host
broadcast_host = _host.broadcast_host


def gradient_sum_host(host, name):
    # type: (np.ndarray, str) -> np.ndarray
    """In place on a host array, under the engine's wire policy (the KVStore's push of gradients)."""
    _world.engine().allreduce(name, host, op="sum", dtype=host.dtype.name)
    return host


def _gradient_allreduce_(tensors, average, names, group):
    # type: (Sequence[Any], bool, Sequence[str], Group) -> None
    """The gradient path (DistributedTrainer, DistributedOptimizer): in place, under the engine's wire policy
    (fp32 as fp16 on the wire with the gradient scale unless PERSEUS_ALLREDUCE_DTYPE says otherwise). Each is
    submitted as soon as its own value exists (asnumpy, or for a GPU NDArray the device path's wait, waits for
    that array only): while MXNet's engine still computes the later ones (a backward pass in flight), the earlier
    ones are already on the wire; those submitted within one negotiation cycle are fused. A GPU NDArray is
    reduced in its device memory (_device.py), a host one through a host copy."""
    eng = group.engine
    hosts = []  # type: List[Any]  # a host copy, or None: reduced in place on the device
    handles = []
    for tensor, name in zip(tensors, names):
        if _device.on_device(tensor):
            dtype = _device.dtype_name(tensor, _ENGINE_DTYPES)
            hosts.append(None)
            handles.append(_device.allreduce_async(eng, name, tensor, "average" if average and dtype in _FLOATS
                                                   else "sum", dtype))
            continue
        host = to_host(tensor, _ENGINE_DTYPES)
        hosts.append(host)
        floating = host.dtype.name in _FLOATS
        handles.append(eng.allreduce_async(name, host, op="average" if average and floating else "sum",
                                           dtype=host.dtype.name))
    for handle in handles:
        handle.wait()
    for tensor, host in zip(tensors, hosts):
        if host is None:
            if average and np.dtype(tensor.dtype).name not in _FLOATS:
                (tensor.astype("float64") / group.size).astype(tensor.dtype).copyto(tensor)  # toward zero
            continue
        if average and host.dtype.name not in _FLOATS:
            host = np.trunc(host / group.size).astype(host.dtype)
        assign(tensor, host)
