"""Horovod's MXNet collectives on the perseus engine, with Horovod 0.28's signatures: allreduce(_),
grouped_allreduce(_), allgather, grouped_allgather, broadcast(_), alltoall, reducescatter, grouped_reducescatter.

They are the kit's (perseus.horovod_kit.host_collectives: exact, Horovod's semantics); this module gives only the
NDArray conversion, and the gradient path of DistributedTrainer / DistributedOptimizer / the KVStore, which takes
the engine's wire policy (fp16 on the wire by default) instead of the exact one.
"""
from typing import Any, List, Sequence

import numpy as np

from perseus.horovod_kit import host_collectives as _host
from perseus.horovod_kit.host_collectives import ENGINE_DTYPES as _ENGINE_DTYPES, FLOATS as _FLOATS
from perseus.horovod_kit.ops import Adasum, Average, Max, Min, Product, Sum  # noqa: F401 (perseus.mxnet's names)

from . import _world
from .process_sets import Group


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


_api = _host.HostCollectives(_NDArrays(), "perseus.mxnet")
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
