"""Horovod's process sets for perseus.tensorflow.horovod: add_process_set / remove_process_set /
init(process_sets=...), and where a collective with `process_set=` runs.

Each registered set gets an engine of its own over its members (perseus.engine.groups: its own negotiation,
stores and Gloo contexts, created on the op library like the job's engine), handed to the ops under the set's id
(perseus_tf_set_process_set_engine); the ops' `process_set_id` attribute picks it. Collectives on disjoint sets
therefore run concurrently. root_rank arguments stay global ranks, as in Horovod. The registry and the
ProcessSet object are the kit's (perseus.horovod_kit.process_sets).

    even = hvd.add_process_set([0, 2])        # collective over every rank, in the same order everywhere
    hvd.allreduce(x, process_set=even)        # on ranks 0 and 2 only
"""
import ctypes
import os
from typing import Any, List, Optional

from perseus.horovod_kit import process_sets as _kit
from perseus.horovod_kit.process_sets import ProcessSet, global_process_set

from .. import _engine
from . import _job


class _Held:
    """A registered set's handle (the kit's ProcessSet.handle): its id and this member's engine."""

    def __init__(self, set_id: int, engine: Any) -> None:
        self.set_id, self.engine = set_id, engine


def _hand_over(set_id: int, engine: Any) -> None:
    lib = _engine._library_handle()
    lib.perseus_tf_set_process_set_engine.argtypes = [ctypes.c_int, ctypes.c_void_p]
    lib.perseus_tf_set_process_set_engine.restype = None
    lib.perseus_tf_set_process_set_engine(set_id, None if engine is None else engine._ptr())


def add_process_set(process_set: Any) -> ProcessSet:
    """Registers a set (a ProcessSet or a list of global ranks) on every rank: collective over all ranks, in the
    same order everywhere. Returns the registered ProcessSet (its process_set_id agrees on every rank)."""
    from perseus.engine.groups import normalise_ranks, subgroup_engine

    job = _job.state.engine
    if job is None:
        raise ValueError("hvd.add_process_set: perseus.tensorflow.horovod has not been initialised: call hvd.init() "
                         "first")
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    if ps.ranks is None:
        raise ValueError("hvd.add_process_set: the global process set is always there; pass a subset of the ranks")
    if ps.process_set_id is not None:
        raise ValueError("hvd.add_process_set: {!r} is registered already".format(ps))
    size = _job.size()
    ranks = normalise_ranks(ps.ranks, size)
    if ranks == list(range(size)):
        raise ValueError("hvd.add_process_set: ranks {} are every rank, the global process set "
                         "(hvd.global_process_set): use it".format(ranks))
    ps.ranks = ranks
    set_id = _kit.reserve(ranks)
    engine = subgroup_engine(job, ranks, "tensorflow.{}".format(set_id), master_addr=os.environ.get("MASTER_ADDR", ""),
                             **_job.state.policy)
    if engine is not None:
        _hand_over(set_id, engine)
    return _kit.register(ps, set_id, None if engine is None else _Held(set_id, engine))


def remove_process_set(process_set: Any) -> bool:
    """Unregisters a set on every rank (collective); its members close its engine. False if it was not registered
    (the global set never is)."""
    found = _kit.unregister(process_set)
    if found is None:
        return False
    _close(found)
    return True


def _close_handle(held: Any) -> None:
    """The ops forget the set first (a later op on it fails with a message), then its engine is closed."""
    _hand_over(held.set_id, None)
    held.engine.close()


def _close(ps: ProcessSet) -> None:
    held, ps.handle = ps.handle, None
    if held is not None:
        _close_handle(held)


def register_at_init(process_sets: Any) -> None:
    """hvd.init(process_sets=...): a list of sets (or rank lists) registered now; "dynamic" needs nothing here."""
    if process_sets is None or process_sets == "dynamic":
        return
    if isinstance(process_sets, (str, bytes)) or not hasattr(process_sets, "__iter__"):
        raise ValueError("hvd.init(process_sets={!r}): pass a list of hvd.ProcessSet (or of rank lists), or "
                         "\"dynamic\"".format(process_sets))
    for ps in process_sets:
        add_process_set(ps)


def close_all(closed_by: str = _kit.CLOSED_BY_SHUTDOWN) -> None:
    """hvd.shutdown() (or an elastic reset: closed_by CLOSED_BY_RESET): every registered set is forgotten by the
    ops and its engine closed, before the job's; a later collective on one is refused, naming what closed it."""
    _kit.remove_all(_close_handle, closed_by)


class Group:
    """Where a collective runs: the set's id (0: every rank), this rank's number in it, its size and its global
    ranks (None for the global set)."""

    def __init__(self, set_id: int, rank: int, size: int, members: Optional[List[int]], engine: Any) -> None:
        self.id, self.rank, self.size, self.members, self.engine = set_id, rank, size, members, engine

    def root(self, global_rank: int, api: str) -> int:
        """A global root rank as this group numbers it."""
        if self.members is None:
            return int(global_rank)
        if int(global_rank) not in self.members:
            raise ValueError("{}: root_rank={} is not in the process set {}".format(api, global_rank, self.members))
        return self.members.index(int(global_rank))

    def key(self) -> str:
        """What generated collective names carry, so members of a set number its collectives alike."""
        return "" if self.id == 0 else "@ps{}".format(self.id)


class _JobGroup(Group):
    """The global set: every rank of the job, its numbers read when asked (before hvd.init() an op on it fails
    in its kernel, naming hvd.init())."""

    def __init__(self) -> None:
        self.id, self.members = 0, None

    @property
    def rank(self) -> int:  # type: ignore[override]
        return _job.rank()

    @property
    def size(self) -> int:  # type: ignore[override]
        return _job.size()

    @property
    def engine(self) -> Any:  # type: ignore[override]
        return _job.state.engine


_JOB = _JobGroup()


def group_of(process_set: Any, api: str) -> Group:
    """The group a collective with `process_set=` runs on. A set that is not registered: ValueError; a
    registered set this rank is not a member of: tf.errors.InvalidArgumentError, as Horovod's ops raise."""
    if _kit.is_global(process_set):
        return _JOB
    if not _kit.is_registered(process_set):
        raise _kit.not_registered(process_set, api)
    if not process_set.included():
        import tensorflow as tf

        raise tf.errors.InvalidArgumentError(None, None, "{}: rank {} is not a member of the provided process set "
                                                         "{!r}".format(api, _job.rank(), process_set))
    return Group(process_set.process_set_id, process_set.rank(), process_set.size(), list(process_set.ranks),
                 process_set.handle.engine)


def check_registered(process_set: Any, api: str) -> None:
    """An optimizer's or tape's `process_set=`: the global set or a registered one (this rank need not be a
    member: a non-member keeps its own gradients, as in Horovod); ValueError else."""
    if _kit.is_global(process_set):
        return
    if not _kit.is_registered(process_set):
        raise _kit.not_registered(process_set, api)


def group_by_id(set_id: int) -> Group:
    """The group of a registered set's id (gradient functions read the id from the forward op)."""
    if set_id == 0:
        return group_of(None, "hvd")
    found = _kit.lookup(set_id)
    if found is None:
        raise ValueError("process set id {} is not registered (removed?)".format(set_id))
    return group_of(found, "hvd")


def included(set_id: int) -> bool:
    """Whether this rank is a member of the registered set `set_id` (0: every rank)."""
    if set_id == 0:
        return True
    found = _kit.lookup(set_id)
    if found is None:
        raise ValueError("process set id {} is not registered: call hvd.add_process_set(...) first".format(set_id))
    return found.included()


def set_size(set_id: int) -> int:
    if set_id == 0:
        return _job.size()
    found = _kit.lookup(set_id)
    if found is None:
        raise ValueError("process set id {} is not registered: call hvd.add_process_set(...) first".format(set_id))
    return found.size()


_kit.bind_queries(lambda: _job.size(), lambda: _job.rank())

__all__ = ["ProcessSet", "global_process_set", "add_process_set", "remove_process_set", "Group", "group_of",
           "group_by_id", "check_registered", "included", "set_size"]
