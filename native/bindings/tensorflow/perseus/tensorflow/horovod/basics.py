"""hvd.init() and who-am-I queries, from the engine the TensorFlow ops submit to."""
import atexit
import threading
from typing import Any, Dict, Optional, Tuple

from perseus.engine import Engine

from .. import _engine
from . import variables

_lock = threading.Lock()
_engine_handle = None  # type: Optional[Engine]
_info = None  # type: Optional[Dict[str, int]]


def init(**policy: Any) -> None:
    """Starts the engine of this job (numbers from perseusrun / torchrun / mpirun, rendezvous with every rank).
    Policy keywords (wire_dtype, gradient_scale, ...) override the PERSEUS_* environment. Idempotent."""
    global _engine_handle, _info
    with _lock:
        if _engine_handle is not None:
            return
        variables.warn_not_honoured()
        engine = _engine.start(**policy)
        _engine_handle, _info = engine, engine.info()
        atexit.register(shutdown)


def shutdown() -> None:
    """Shuts the engine down on every rank; init() may be called again afterwards."""
    global _engine_handle, _info
    with _lock:
        engine, _engine_handle, _info = _engine_handle, None, None
    if engine is not None:
        _engine.stop(engine)


def is_initialized() -> bool:
    return _engine_handle is not None


def _require() -> Dict[str, int]:
    info = _info
    if info is None:
        raise ValueError("perseus.tensorflow.horovod has not been initialised: call hvd.init() first")
    return info


def size() -> int:
    return _require()["size"]


def rank() -> int:
    return _require()["rank"]


def local_size() -> int:
    return _require()["local_size"]


def local_rank() -> int:
    return _require()["local_rank"]


def cross_size() -> int:
    """Number of nodes."""
    return _require()["num_nodes"]


def cross_rank() -> int:
    """Index of this rank's node."""
    return _require()["node"]


def engine_info() -> Dict[str, int]:
    """The engine's counters now (collectives issued, fused groups, wire policy)."""
    engine = _engine_handle
    if engine is None:
        raise ValueError("perseus.tensorflow.horovod has not been initialised: call hvd.init() first")
    return engine.info()


def engine_wire_bytes(dtype: str, level: str = "all") -> Tuple[int, int]:
    """(payload bytes, collectives) of `dtype` ("float16", "float32", ...) this rank has handed to the
    transport on `level` so far: what the wire policy did (an fp32 allreduce travels as float16 unless
    PERSEUS_ALLREDUCE_DTYPE=1; a broadcast keeps its dtype)."""
    engine = _engine_handle
    if engine is None:
        raise ValueError("perseus.tensorflow.horovod has not been initialised: call hvd.init() first")
    return engine.wire_bytes(level, dtype)


def mpi_threads_supported() -> bool:
    return False


def mpi_enabled() -> bool:
    return False


def gloo_enabled() -> bool:
    return True


def nccl_built() -> bool:
    return False
