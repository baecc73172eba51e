"""Horovod's MXNet collectives on the perseus engine: allreduce(_), broadcast(_), allgather.

NDArrays are copied to the host, reduced by the engine (fp32: fp16 on the wire with the gradient scale
unless PERSEUS_ALLREDUCE_DTYPE says otherwise) and copied back into the NDArray's context. Every rank
must call the same collectives; unnamed ones are named by their kind and call count, so they must be
called in the same order on every rank (as in Horovod).
"""
import itertools
from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy as np

from . import _world

_FLOATS = ("float16", "float32", "float64")
_DTYPES = _FLOATS + ("int32", "int64", "uint8")
_counters = {}  # type: Dict[str, Iterator[int]]


def _name(kind, name):
    # type: (str, Optional[str]) -> str
    if name is not None:
        return "%s.%s" % (kind, name)
    counter = _counters.setdefault(kind, itertools.count())
    return "%s.noname.%d" % (kind, next(counter))


def to_host(tensor):
    # type: (Any) -> np.ndarray
    host = np.ascontiguousarray(tensor.asnumpy())
    if host.dtype.name not in _DTYPES:
        raise TypeError("perseus.mxnet: dtype %s is not supported (one of %s)" % (host.dtype.name, ", ".join(_DTYPES)))
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


def allreduce_host(host, average, name):
    # type: (np.ndarray, bool, str) -> np.ndarray
    """In place on a host array; integer averages are truncated toward zero (as integer division)."""
    floating = host.dtype.name in _FLOATS
    _world.engine().allreduce(name, host, op="average" if average and floating else "sum", dtype=host.dtype.name)
    if average and not floating:
        np.copyto(host, np.trunc(host / _world.size()).astype(host.dtype))
    return host


def allreduce(tensor, average=True, name=None, priority=0):
    # type: (Any, bool, Optional[str], int) -> Any
    """A new NDArray: the average (average=True, Horovod's default) or the sum of `tensor` over all ranks."""
    return from_host(allreduce_host(to_host(tensor), average, _name("allreduce", name)), tensor)


def allreduce_(tensor, average=True, name=None, priority=0):
    # type: (Any, bool, Optional[str], int) -> Any
    """In place: `tensor` becomes the average (or sum) over all ranks; returns it."""
    return assign(tensor, allreduce_host(to_host(tensor), average, _name("allreduce", name)))


def broadcast_host(host, root_rank, name):
    # type: (np.ndarray, int, str) -> np.ndarray
    if not 0 <= root_rank < _world.size():
        raise ValueError("root_rank %d is not a rank of this %d-rank job" % (root_rank, _world.size()))
    _world.engine().broadcast(name, host, root=root_rank, dtype=host.dtype.name)
    return host


def broadcast(tensor, root_rank=0, name=None, priority=0):
    # type: (Any, int, Optional[str], int) -> Any
    """A new NDArray holding root_rank's `tensor`."""
    return from_host(broadcast_host(to_host(tensor), root_rank, _name("broadcast", name)), tensor)


def broadcast_(tensor, root_rank=0, name=None, priority=0):
    # type: (Any, int, Optional[str], int) -> Any
    """In place: `tensor` becomes root_rank's; returns it."""
    return assign(tensor, broadcast_host(to_host(tensor), root_rank, _name("broadcast", name)))


def allgather_host(host, name):
    # type: (np.ndarray, str) -> np.ndarray
    if host.ndim == 0:
        raise ValueError("allgather needs at least one dimension (it concatenates along the first)")
    data, _ = _world.engine().allgather(name, host, dtype=host.dtype.name)
    return np.frombuffer(bytes(data), dtype=host.dtype).reshape((-1,) + host.shape[1:]).copy()


def allgather(tensor, name=None, priority=0):
    # type: (Any, Optional[str], int) -> Any
    """The ranks' tensors concatenated along the first dimension (its size may differ by rank)."""
    return from_host(allgather_host(to_host(tensor), _name("allgather", name)), tensor)


def grouped_allreduce_(tensors, average, names):
    # type: (Sequence[Any], bool, Sequence[str]) -> None
    """Allreduces several NDArrays in place. Each is submitted as soon as its own value exists (asnumpy waits
    for that array only): while MXNet's engine still computes the later ones (a backward pass in flight),
    the earlier ones are already on the wire; those submitted within one negotiation cycle are fused."""
    eng = _world.engine()
    hosts = []  # type: List[np.ndarray]
    handles = []
    for tensor, name in zip(tensors, names):
        host = to_host(tensor)
        hosts.append(host)
        floating = host.dtype.name in _FLOATS
        handles.append(eng.allreduce_async(name, host, op="average" if average and floating else "sum",
                                           dtype=host.dtype.name))
    for handle in handles:
        handle.wait()
    for tensor, host in zip(tensors, hosts):
        if average and host.dtype.name not in _FLOATS:
            host = np.trunc(host / _world.size()).astype(host.dtype)
        assign(tensor, host)
