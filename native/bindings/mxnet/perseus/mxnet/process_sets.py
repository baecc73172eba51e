"""Horovod's process sets for perseus.mxnet: a collective on a subset of the ranks. The ProcessSet object and its
registry are the kit's (perseus.horovod_kit.process_sets); each registered set holds an engine of its own over
its members (perseus.engine.groups), so collectives on disjoint sets run concurrently.

    even = hvd.add_process_set([0, 2])          # collective: every rank calls it, in the same order
    hvd.allreduce(x, process_set=even)          # on ranks 0 and 2 only
    hvd.init(process_sets=[hvd.ProcessSet([0, 1])])   # sets made at init

root_rank arguments stay global ranks, as in Horovod. add_process_set / remove_process_set work at any time
(Horovod's dynamic mode, HOROVOD_DYNAMIC_PROCESS_SETS=1, without needing it).
"""
import os
from typing import Any, List, Optional

from perseus.horovod_kit import process_sets as _kit
from perseus.horovod_kit.process_sets import Group, ProcessSet, global_process_set  # noqa: F401 (perseus.mxnet's names)

from . import _job as _world


def _open_engine(ranks, set_id):
    # type: (List[int], int) -> Any
    from perseus.engine.groups import subgroup_engine

    return subgroup_engine(_world.engine(), ranks, "mxnet.%d" % set_id, master_addr=os.environ.get("MASTER_ADDR", ""))


def _close_engine(engine):
    # type: (Any) -> None
    engine.close()


def add_process_set(process_set):
    # type: (Any) -> ProcessSet
    """Registers a set (a ProcessSet or a list of ranks) on every rank; collective over all ranks."""
    return _kit.add(process_set, _world.size(), _open_engine)


def remove_process_set(process_set):
    # type: (Any) -> bool
    """Unregisters a set on every rank (collective); its members close its engine. False if it was not registered."""
    return _kit.remove(process_set, _close_engine)


def close_all():
    # type: () -> None
    """At shutdown: every registered set's engine is closed (the next init starts with none)."""
    _kit.remove_all(_close_engine)
