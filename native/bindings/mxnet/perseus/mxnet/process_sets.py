"""Horovod's process-set names for perseus.mxnet. Only the global set exists: collectives on a subset of the ranks
(hvd.add_process_set) are not supported yet, and say so by name instead of running on every rank."""
from typing import Any, List, Optional, Sequence


class ProcessSet(object):
    """A set of ranks a collective runs on. perseus.mxnet has one: every rank (global_process_set)."""

    def __init__(self, ranks=None):
        # type: (Optional[Sequence[int]]) -> None
        self.ranks = None if ranks is None else sorted(int(r) for r in ranks)  # type: Optional[List[int]]
        self.process_set_id = 0 if ranks is None else None

    def size(self):
        # type: () -> int
        from . import _world
        return _world.size() if self.ranks is None else len(self.ranks)

    def rank(self):
        # type: () -> int
        from . import _world
        return _world.rank() if self.ranks is None else self.ranks.index(_world.rank())

    def included(self):
        # type: () -> bool
        from . import _world
        return self.ranks is None or _world.rank() in self.ranks

    def __repr__(self):
        # type: () -> str
        return "ProcessSet(process_set_id=%s, ranks=%s)" % (self.process_set_id, self.ranks or "all")


global_process_set = ProcessSet()

_NOT_YET = ("not supported yet: process sets in perseus.mxnet (%s); collectives run on every rank: drop the "
            "process_set argument, or run the subset as its own job")


def check_global(process_set):
    # type: (Any) -> None
    if process_set is not None and process_set is not global_process_set and process_set.ranks is not None:
        raise NotImplementedError(_NOT_YET % ("process_set=%r" % (process_set,)))


def add_process_set(process_set):
    # type: (Any) -> ProcessSet
    raise NotImplementedError(_NOT_YET % "hvd.add_process_set")


def remove_process_set(process_set):
    # type: (Any) -> bool
    raise NotImplementedError(_NOT_YET % "hvd.remove_process_set")
