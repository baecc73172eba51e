"""The process's place in the job and its engine (no process sets: _world.py adds them): Horovod's basics (perseus.horovod_kit.basics) over the engine
linked into this wheel's library, which the operator of perseus-mxnet-sync-bn.patch shares. PERSEUS_* set its
wire policy (fp16 on the wire with the gradient scale by default, PERSEUS_ALLREDUCE_DTYPE=1 for fp32)."""
from typing import Any

from perseus.horovod_kit import process_sets as _sets
from perseus.horovod_kit.basics import EngineBasics

from . import _engine, _native


def _start():
    # type: () -> Any
    from perseus import engine

    _engine.use_binding_engine()
    handle = engine.Engine.from_environment()
    # the operator of perseus-mxnet-sync-bn.patch (a patched libmxnet) exchanges through this engine
    _native.load().perseus_mxnet_set_engine(handle._ptr())
    return handle


def _stop(handle):
    # type: (Any) -> None
    _native.load().perseus_mxnet_set_engine(None)
    handle.close()


_basics = EngineBasics(_start, _stop)
is_initialized = _basics.is_initialized
engine = _basics.engine
size = _basics.size
rank = _basics.rank
local_size = _basics.local_size
local_rank = _basics.local_rank
cross_size = _basics.cross_size
cross_rank = _basics.cross_rank
_sets.bind_queries(size, rank, engine)
