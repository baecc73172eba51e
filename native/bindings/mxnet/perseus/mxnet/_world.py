"""The process's place in the job and its engine: init() / shutdown() and the rank numbers (Horovod's
basics). The engine is the one linked into this wheel's library; PERSEUS_* set its wire policy (fp16 on the
wire with the gradient scale by default, PERSEUS_ALLREDUCE_DTYPE=1 for fp32)."""
import threading
from typing import Any, Dict, Optional

from . import _engine, _native

_lock = threading.Lock()
_engine_handle = None  # type: Optional[Any]
_info = None  # type: Optional[Dict[str, int]]


class NotInitializedError(RuntimeError):
    pass


def init(comm=None, process_sets=None):
    # type: (Any, Any) -> None
    """Joins the job (numbers from perseusrun / mpirun / torchrun-style variables, see perseus.launch); a second
    call is a no-op. process_sets: sets (ProcessSet or rank lists) registered now, or "dynamic" (Horovod's
    names; sets can be added later either way). comm (an MPI communicator) is not supported."""
    global _engine_handle, _info
    if comm is not None:
        raise NotImplementedError("not supported: hvd.init(comm=...) (an MPI communicator); perseus.mxnet runs every "
                                  "rank the launcher started: use process sets for subsets")
    with _lock:
        already = _engine_handle is not None
    if not already:
        _start()
    from . import process_sets as sets
    sets.init_sets(process_sets)


def _start():
    # type: () -> None
    global _engine_handle, _info
    with _lock:
        if _engine_handle is not None:
            return
        from perseus import engine

        _engine.use_binding_engine()
        _engine_handle = engine.Engine.from_environment()
        _info = _engine_handle.info()
        # the operator of perseus-mxnet-sync-bn.patch (a patched libmxnet) exchanges through this engine
        _native.load().perseus_mxnet_set_engine(_engine_handle._ptr())


def shutdown():
    # type: () -> None
    """Leaves the job (every rank must call it); init() may be called again afterwards."""
    global _engine_handle, _info
    from . import process_sets as sets
    sets.close_all()
    with _lock:
        handle, _engine_handle, _info = _engine_handle, None, None
    if handle is not None:
        _native.load().perseus_mxnet_set_engine(None)
        handle.close()


def is_initialized():
    # type: () -> bool
    return _engine_handle is not None


def engine():
    # type: () -> Any
    if _engine_handle is None:
        raise NotInitializedError("perseus.mxnet is not initialised: call perseus.mxnet.init() first")
    return _engine_handle


def _number(key):
    # type: (str) -> int
    engine()
    assert _info is not None
    return int(_info[key])


def size():
    # type: () -> int
    return _number("size")


def rank():
    # type: () -> int
    return _number("rank")


def local_size():
    # type: () -> int
    return _number("local_size")


def local_rank():
    # type: () -> int
    return _number("local_rank")


def cross_size():
    # type: () -> int
    """Nodes in the job (Horovod's cross size: ranks with the same local rank)."""
    return _number("num_nodes")


def cross_rank():
    # type: () -> int
    """This rank's node (Horovod's cross rank)."""
    return _number("node")
