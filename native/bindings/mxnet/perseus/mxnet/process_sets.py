"""Horovod's process sets for perseus.mxnet: a collective on a subset of the ranks. Each registered set has an
engine of its own over its members (perseus.engine.groups), so collectives on disjoint sets run concurrently.

    even = hvd.add_process_set([0, 2])          # collective: every rank calls it, in the same order
    hvd.allreduce(x, process_set=even)          # on ranks 0 and 2 only
    hvd.init(process_sets=[hvd.ProcessSet([0, 1])])   # sets made at init

root_rank arguments stay global ranks, as in Horovod. add_process_set / remove_process_set work at any time
(Horovod's dynamic mode, HOROVOD_DYNAMIC_PROCESS_SETS=1, without needing it).
"""
import threading
from typing import Any, Dict, List, Optional, Sequence

from . import _world


class ProcessSet(object):
    """A set of global ranks. Registered by add_process_set (or init(process_sets=...)), then usable as
    `process_set=` on every collective; global_process_set is every rank."""

    def __init__(self, ranks=None):
        # type: (Optional[Sequence[int]]) -> None
        self.ranks = None if ranks is None else sorted(int(r) for r in ranks)  # type: Optional[List[int]]
        self.process_set_id = 0 if ranks is None else None  # type: Optional[int]
        self._engine = None  # type: Any

    def _members(self):
        # type: () -> List[int]
        return list(range(_world.size())) if self.ranks is None else list(self.ranks)

    def size(self):
        # type: () -> int
        return len(self._members())

    def rank(self):
        # type: () -> int
        """This rank's index in the set (-1 when it is not a member)."""
        members = self._members()
        me = _world.rank()
        return members.index(me) if me in members else -1

    def included(self):
        # type: () -> bool
        return _world.rank() in self._members()

    def __repr__(self):
        # type: () -> str
        return "ProcessSet(process_set_id=%s, ranks=%s)" % (self.process_set_id, self.ranks or "all")


global_process_set = ProcessSet()

_lock = threading.Lock()
_registered = {}  # type: Dict[int, ProcessSet]
_next_id = [1]


def add_process_set(process_set):
    # type: (Any) -> ProcessSet
    """Registers a set (a ProcessSet or a list of ranks) on every rank; collective over all ranks."""
    from perseus.engine.groups import normalise_ranks, subgroup_engine

    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    if ps.ranks is None:
        raise ValueError("the global process set is always there: add_process_set takes a subset of the ranks")
    ps.ranks = normalise_ranks(ps.ranks, _world.size())
    with _lock:
        if ps.process_set_id is not None:
            raise ValueError("%r is registered already" % (ps,))
        if any(other.ranks == ps.ranks for other in _registered.values()):
            raise ValueError("a process set with ranks %s exists already: use it" % (ps.ranks,))
        set_id = _next_id[0]
        _next_id[0] += 1
    import os
    ps._engine = subgroup_engine(_world.engine(), ps.ranks, "mxnet.%d" % set_id,
                                 master_addr=os.environ.get("MASTER_ADDR", ""))
    with _lock:
        ps.process_set_id = set_id
        _registered[set_id] = ps
    return ps


def remove_process_set(process_set):
    # type: (ProcessSet) -> bool
    """Unregisters a set on every rank (collective); its members close its engine. False if it was not registered."""
    with _lock:
        if process_set.process_set_id is None or _registered.get(process_set.process_set_id) is not process_set:
            return False
        del _registered[process_set.process_set_id]
    engine, process_set._engine = process_set._engine, None
    process_set.process_set_id = None
    if engine is not None:
        engine.close()
    return True


def init_sets(process_sets):
    # type: (Any) -> None
    """hvd.init(process_sets=...): a list of sets (or of rank lists) registered now; "dynamic" needs nothing."""
    if process_sets is None or process_sets == "dynamic":
        return
    for ps in process_sets:
        add_process_set(ps)


def close_all():
    # type: () -> None
    """At shutdown: every registered set's engine is closed (the next init starts with none)."""
    with _lock:
        sets = list(_registered.values())
        _registered.clear()
        _next_id[0] = 1
    for ps in sets:
        engine, ps._engine = ps._engine, None
        ps.process_set_id = None
        if engine is not None:
            engine.close()


class Group(object):
    """Where a collective runs: the engine, this rank's number and the size, of the global set or of a
    registered one of which this rank is a member."""

    def __init__(self, process_set):
        # type: (Any) -> None
        ps = global_process_set if process_set is None else process_set
        if ps is global_process_set or ps.ranks is None:
            self.engine, self.rank, self.size, self.members = _world.engine(), _world.rank(), _world.size(), None
            return
        if ps.process_set_id is None or _registered.get(ps.process_set_id) is not ps:
            raise ValueError("%r is not registered: call hvd.add_process_set(...) on every rank first" % (ps,))
        if not ps.included():
            raise ValueError("rank %d is not in %r: only its members call collectives on it" % (_world.rank(), ps))
        self.engine, self.rank, self.size, self.members = ps._engine, ps.rank(), ps.size(), list(ps.ranks)

    def root(self, global_rank):
        # type: (int) -> int
        """A global root rank as this group numbers it."""
        if self.members is None:
            if not 0 <= global_rank < self.size:
                raise ValueError("root_rank %d is not a rank of this %d-rank job" % (global_rank, self.size))
            return global_rank
        if global_rank not in self.members:
            raise ValueError("root_rank %d is not in the process set %s" % (global_rank, self.members))
        return self.members.index(global_rank)
