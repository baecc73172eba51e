"""A test-only perseus binding for numpy arrays. Its own part is only the tensor conversion, here the identity
(the kit's `Conversion`); basics, process sets and every collective are perseus.horovod_kit's. It proves the kit
framework-neutral: tests/kit/test_numpy_binding.py runs it through the same conformance rows as the framework
bindings (tests/support/hvd_conformance.py). The engine is perseus.engine's (PERSEUS_ENGINE_LIBRARY)."""
import os

from perseus.horovod_kit import host_collectives as _host
from perseus.horovod_kit import process_sets as _sets
from perseus.horovod_kit.basics import EngineBasics
from perseus.horovod_kit.ops import Adasum, Average, Max, Min, Product, Sum  # noqa: F401
from perseus.horovod_kit.process_sets import ProcessSet, global_process_set  # noqa: F401


def _start():
    from perseus import engine

    return engine.Engine.from_environment()


def _close(handle):
    handle.close()


_basics = EngineBasics(_start, _close)
size, rank, is_initialized = _basics.size, _basics.rank, _basics.is_initialized
_sets.bind_queries(size, rank, _basics.engine)


def _open_set(ranks, set_id):
    from perseus.engine.groups import subgroup_engine

    return subgroup_engine(_basics.engine(), ranks, "numpy.%d" % set_id, master_addr=os.environ.get("MASTER_ADDR", ""))


def add_process_set(process_set):
    return _sets.add(process_set, size(), _open_set)


def remove_process_set(process_set):
    return _sets.remove(process_set, _close)


def init(process_sets=None):
    _basics.init()
    _sets.add_at_init(process_sets, add_process_set)


def shutdown():
    _sets.remove_all(_close)
    _basics.shutdown()


_api = _host.HostCollectives(_host.Conversion(), "the numpy test binding")
allreduce, allreduce_ = _api.allreduce, _api.allreduce_
grouped_allreduce, grouped_allreduce_ = _api.grouped_allreduce, _api.grouped_allreduce_
broadcast, broadcast_ = _api.broadcast, _api.broadcast_
allgather, grouped_allgather = _api.allgather, _api.grouped_allgather
alltoall = _api.alltoall
reducescatter, grouped_reducescatter = _api.reducescatter, _api.grouped_reducescatter

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "add_process_set", "remove_process_set",
           "ProcessSet", "global_process_set", "Average", "Sum", "Min", "Max", "Product", "Adasum", "allreduce",
           "allreduce_", "grouped_allreduce", "grouped_allreduce_", "broadcast", "broadcast_", "allgather",
           "grouped_allgather", "alltoall", "reducescatter", "grouped_reducescatter"]
