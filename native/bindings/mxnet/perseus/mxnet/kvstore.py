"""The dist_sync_perseus KVStore: `perseus.mxnet.create('dist_sync_perseus')` where MXNet takes
`mx.kvstore.create('dist_sync')` (gluon.Trainer, Module.fit).

A KVStoreBase whose type contains 'dist' and which is not capable of 'optimizer', so MXNet keeps the
updates local and uses the store to reduce: pushes are summed over the ranks (and over the list of
values one rank pushes) like MXNet's dist_sync, and a pull returns the last reduced value. The seed's
extras: local_rank, init(..., param_only=True) (rank 0's value, synchronised once, never updated by the
store), push(..., op=PerseusOp.Sum|Max|Min) and _barrier(). Max and Min gather every rank's value and
reduce on the host (the engine reduces sums on the wire); Sum uses the engine's allreduce.
"""
from typing import Any, Dict, List, Sequence, Tuple, Union

import mxnet as mx
import numpy as np

from . import _world, collectives
from .process_sets import Group

TYPE = "dist_sync_perseus"


class PerseusOp(object):
    """The reduction of a push: the seed's `PerseusOp.Sum`, `.Max`, `.Min`."""

    Sum = "sum"
    Max = "max"
    Min = "min"


_OPS = (PerseusOp.Sum, PerseusOp.Max, PerseusOp.Min)


def _pairs(key, value):
    # type: (Any, Any) -> List[Tuple[Any, Any]]
    """(key, value) pairs: one key with an NDArray or a list of NDArrays (devices), or lists of both."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise ValueError("%d keys need a list of %d values" % (len(key), len(key)))
        return list(zip(key, value))
    return [(key, value)]


def _arrays(value):
    # type: (Any) -> List[Any]
    arrays = list(value) if isinstance(value, (list, tuple)) else [value]
    for array in arrays:
        if not isinstance(array, mx.nd.NDArray):
            raise TypeError("dist_sync_perseus stores NDArrays, not %s" % type(array).__name__)
        if array.stype != "default":
            raise TypeError("not supported yet: %s NDArrays in dist_sync_perseus (dense only)" % array.stype)
    return arrays


class PerseusKVStore(mx.kvstore.KVStoreBase):
    """See the module's documentation."""

    def __init__(self, name=TYPE):
        # type: (str) -> None
        if name != TYPE:
            raise ValueError("unknown perseus KVStore type %r: the one type is %r" % (name, TYPE))
        _world.init()
        self._store = {}  # type: Dict[Any, Any]
        self._param_only = set()  # type: set

    # ---- what MXNet asks ------------------------------------------------------------------------
    @property
    def type(self):
        # type: () -> str
        return TYPE

    @property
    def rank(self):
        # type: () -> int
        return _world.rank()

    @property
    def num_workers(self):
        # type: () -> int
        return _world.size()

    @property
    def local_rank(self):
        # type: () -> int
        return _world.local_rank()

    def is_capable(self, capability):
        # type: (str) -> bool
        """No capability: 'optimizer' is False, so gluon.Trainer and Module.fit update locally."""
        return False

    def set_optimizer(self, optimizer):
        # type: (Any) -> None
        raise NotImplementedError("not supported yet: an optimizer on dist_sync_perseus (updates stay local: "
                                  "create the Trainer with update_on_kvstore=False or leave it unset)")

    def set_gradient_compression(self, compression_params):
        # type: (Any) -> None
        raise NotImplementedError("not supported yet: MXNet gradient compression on dist_sync_perseus; the engine "
                                  "sends fp16 by default (PERSEUS_ALLREDUCE_DTYPE)")

    def save_optimizer_states(self, fname, dump_optimizer=False):
        # type: (str, bool) -> None
        raise NotImplementedError("dist_sync_perseus holds no optimizer: save the Trainer's states instead")

    def load_optimizer_states(self, fname):
        # type: (str) -> None
        raise NotImplementedError("dist_sync_perseus holds no optimizer: load the Trainer's states instead")

    # ---- the store ------------------------------------------------------------------------------
    def init(self, key, value, param_only=False):
        # type: (Any, Any, bool) -> None
        """Stores rank 0's value under each key. param_only=True: the key is a parameter synchronised
        once here and never updated by the store (a push to it fails)."""
        for k, v in _pairs(key, value):
            if k in self._store:
                raise ValueError("dist_sync_perseus: key %r is already initialised" % (k,))
            self._set_from_root(k, v)
            if param_only:
                self._param_only.add(k)

    def _set_from_root(self, key, value):
        # type: (Any, Any) -> None
        self._store[key] = collectives.broadcast(_arrays(value)[0], 0, name="kv.init.%s" % (key,))

    def push(self, key, value, priority=0, op=PerseusOp.Sum):
        # type: (Any, Any, int, str) -> None
        """Reduces the pushed values (a list: summed locally first) over the ranks with op and stores it."""
        if op not in _OPS:
            raise ValueError("op must be PerseusOp.Sum, PerseusOp.Max or PerseusOp.Min, not %r" % (op,))
        for k, v in _pairs(key, value):
            if k not in self._store:
                raise KeyError("dist_sync_perseus: key %r was never initialised (call init first)" % (k,))
            if k in self._param_only:
                raise ValueError("dist_sync_perseus: key %r was initialised with param_only=True: the store never "
                                 "updates it" % (k,))
            arrays = _arrays(v)
            local = collectives.to_host(arrays[0]).copy()
            for other in arrays[1:]:
                local += collectives.to_host(other)
            if local.shape != self._store[k].shape:
                raise ValueError("dist_sync_perseus: push of shape %s to key %r of shape %s"
                                 % (local.shape, k, self._store[k].shape))
            self._store[k] = collectives.from_host(self._reduce(k, local, op), self._store[k])

    def _reduce(self, key, local, op):
        # type: (Any, np.ndarray, str) -> np.ndarray
        if op == PerseusOp.Sum:
            return collectives.gradient_sum_host(local, "kv.push.%s" % (key,))
        gathered = collectives.allgather_host(local.reshape((1,) + local.shape), "kv.push.%s.%s" % (op, key),
                                              Group(None, "dist_sync_perseus push"))
        return (gathered.max(axis=0) if op == PerseusOp.Max else gathered.min(axis=0)).astype(local.dtype)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        # type: (Any, Any, int, bool) -> None
        """Copies each key's stored value into out (an NDArray or a list of them)."""
        if out is None:
            raise ValueError("dist_sync_perseus: pull needs out=")
        for k, o in _pairs(key, out):
            if k not in self._store:
                raise KeyError("dist_sync_perseus: key %r was never initialised (call init first)" % (k,))
            for array in _arrays(o):
                self._store[k].copyto(array)

    def pushpull(self, key, value, out=None, priority=0):
        # type: (Any, Any, Any, int) -> None
        """push then pull; out=None writes the result into value. A key seen for the first time is
        initialised with zeros (what gluon.Trainer's update_on_kvstore=False path pushes to)."""
        for k, v in _pairs(key, value):
            if k not in self._store:
                first = _arrays(v)[0]
                self._store[k] = mx.nd.zeros(first.shape, ctx=first.context, dtype=first.dtype)
            self.push(k, v, priority)
            self.pull(k, v if out is None else dict(_pairs(key, out))[k], priority)

    def broadcast(self, key, value, out, priority=0):
        # type: (Any, Any, Any, int) -> None
        """Stores rank 0's value under each key (initialising it, or replacing what it held) and pulls it
        into out: what gluon.Trainer calls to start every rank from rank 0's parameters."""
        for k, v in _pairs(key, value):
            if k in self._param_only:
                raise ValueError("dist_sync_perseus: key %r was initialised with param_only=True: the store never "
                                 "updates it" % (k,))
            self._set_from_root(k, v)
        self.pull(key, out, priority)

    def _barrier(self):
        # type: () -> None
        """Waits until every rank has reached it."""
        _world.engine().barrier("kv.barrier")


def create(name=TYPE):
    # type: (str) -> PerseusKVStore
    """perseus.mxnet.create('dist_sync_perseus'), in place of mx.kvstore.create('dist_sync')."""
    return PerseusKVStore(name)
