"""Python objects through perseus.mxnet's collectives (Horovod's broadcast_object / allgather_object): pickled
into uint8 arrays, their lengths exchanged first."""
import pickle
from typing import Any, List, Optional

import numpy as np

from . import _world, collectives
from .process_sets import Group, global_process_set


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    # type: (Any, int, Optional[str], Any) -> Any
    """root_rank's `obj` on every rank (anything pickle can carry)."""
    group = Group(process_set, "hvd.broadcast_object")
    name = collectives._name("broadcast_object", name, group)
    root = _world.rank() == root_rank
    payload = np.frombuffer(bytearray(pickle.dumps(obj)), dtype=np.uint8) if root else np.zeros(0, np.uint8)
    length = np.asarray([payload.size], dtype=np.int64)
    collectives.broadcast_host(length, root_rank, name + ".length", group)
    data = np.ascontiguousarray(payload) if root else np.zeros(int(length[0]), np.uint8)
    collectives.broadcast_host(data, root_rank, name + ".data", group)
    return pickle.loads(data.tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    # type: (Any, Optional[str], Any) -> List[Any]
    """Every rank's `obj`, in rank order."""
    group = Group(process_set, "hvd.allgather_object")
    name = collectives._name("allgather_object", name, group)
    payload = np.frombuffer(bytearray(pickle.dumps(obj)), dtype=np.uint8)
    lengths = collectives.allgather_host(np.asarray([payload.size], dtype=np.int64), name + ".lengths", group)
    data = collectives.allgather_host(np.ascontiguousarray(payload), name + ".data", group)
    out, start = [], 0
    for length in lengths.tolist():
        out.append(pickle.loads(data[start:start + length].tobytes()))
        start += length
    return out
