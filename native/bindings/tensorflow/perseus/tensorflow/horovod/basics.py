"""hvd.init() and who-am-I queries, from the engine the TensorFlow ops submit to."""
import atexit
from typing import Any, Dict, Tuple

from perseus.engine import EngineError
from perseus.horovod_kit import elastic_worker
from perseus.horovod_kit import process_sets as _kit_sets
from perseus.horovod_kit.capabilities import Capabilities

from .. import _engine
from . import _job, collectives, variables
from . import process_sets as sets

_state = _job.state


def init(comm: Any = None, process_sets: Any = None, **policy: Any) -> None:
    """Starts the engine of this job (numbers from perseusrun / torchrun / mpirun, rendezvous with every rank).
    Policy keywords (wire_dtype, gradient_scale, ...) override the PERSEUS_* environment. Idempotent.
    process_sets: a list of hvd.ProcessSet (or rank lists) registered now (every rank passes the same), or
    "dynamic" (sets may be added and removed later: always allowed in perseus). Horovod's `comm` (an MPI
    communicator or rank list) is not supported."""
    if comm is not None:
        raise NotImplementedError("not supported yet: hvd.init(comm=...) in perseus.tensorflow.horovod (every rank "
                                  "of the job takes part); call hvd.init(), with process_sets=[...] for subsets")
    with _state.lock:
        if _state.engine is not None:
            return
        _state.policy = dict(policy)
        variables.warn_not_honoured()
        if elastic_worker.enabled():
            elastic_worker.rendezvous()  # blocks until perseusrun forms the next generation; exports its numbers
        engine = _engine.start(**policy)
        # a new engine has no collective in flight: every rank numbers its unnamed collectives from 0 again
        # (ranks that diverged under the previous engine, e.g. one rank's test failing midway, agree again)
        collectives.reset_names()
        _state.engine, _state.info = engine, engine.info()
        atexit.register(shutdown)
    sets.register_at_init(process_sets)


def shutdown() -> None:
    """Shuts the engine down on every rank; init() may be called again afterwards."""
    if _state.engine is not None:
        sets.close_all()  # the sets' engines end before the job's
    with _state.lock:
        engine, _state.engine, _state.info = _state.engine, None, None
    if engine is not None:
        _engine.stop(engine)


def shutdown_local() -> None:
    """Leaves a job whose ranks may be gone (an elastic reset): closes this rank's engines without waiting for
    the others; a peer already lost makes the close fail, which is expected here. The process sets registered so
    far are closed: a collective on one is refused, naming the reset, until it is registered again."""
    try:
        sets.close_all(_kit_sets.CLOSED_BY_RESET)
    except EngineError:
        pass
    with _state.lock:
        engine, _state.engine, _state.info = _state.engine, None, None
    if engine is not None:
        try:
            _engine.stop(engine)
        except EngineError:
            pass


def is_initialized() -> bool:
    return _state.engine is not None


_require = _job.require
size, rank, local_size, local_rank, cross_size, cross_rank = (_job.size, _job.rank, _job.local_size, _job.local_rank,
                                                              _job.cross_size, _job.cross_rank)


def engine_info() -> Dict[str, int]:
    """The engine's counters now (collectives issued, fused groups, wire policy)."""
    engine = _state.engine
    if engine is None:
        raise ValueError("perseus.tensorflow.horovod has not been initialised: call hvd.init() first")
    return engine.info()


def engine_wire_bytes(dtype: str, level: str = "all") -> Tuple[int, int]:
    """(payload bytes, collectives) of `dtype` ("float16", "float32", ...) this rank has handed to the
    transport on `level` so far: what the wire policy did (an fp32 gradient of DistributedGradientTape or a
    DistributedOptimizer travels as float16 unless PERSEUS_ALLREDUCE_DTYPE=1; hvd.allreduce of fp32 as float64,
    exact; a broadcast keeps its dtype). Counts the job's engine (not the process sets' engines)."""
    engine = _state.engine
    if engine is None:
        raise ValueError("perseus.tensorflow.horovod has not been initialised: call hvd.init() first")
    return engine.wire_bytes(level, dtype)


def mpi_threads_supported() -> bool:
    """False: perseus runs no MPI collectives (MPI only starts the job under mpirun)."""
    _require()
    return False


def mpi_enabled() -> bool:
    return False


def mpi_built() -> bool:
    """False: the collectives never run over MPI (perseus uses MPI at most to bootstrap under mpirun)."""
    return False


def gloo_enabled() -> bool:
    return True


def gloo_built() -> bool:
    return True


def _device_report() -> Any:
    _engine.library()
    from perseus.engine import _device
    return _device.device_report()


_capabilities = Capabilities(_device_report, is_initialized)


def nccl_built() -> int:
    """NCCL's version code when this wheel's engine has device buffers (a CUDA cell: the DEVICE_GPU collectives) and
    found NCCL, else 0 (a CPU wheel reduces host tensors through Gloo), as Horovod answers for its build."""
    return _capabilities.nccl_built()


def ddl_built() -> bool:
    return False


def ccl_built() -> bool:
    return False


def cuda_built() -> bool:
    """True for a CUDA cell's wheel (its ops have DEVICE_GPU kernels and its engine device buffers), False for a
    CPU wheel (host kernels only)."""
    return _capabilities.cuda_built()


def rocm_built() -> bool:
    return False


def is_homogeneous() -> bool:
    """Whether every node runs the same number of ranks."""
    info = _require()
    return info["size"] == info["local_size"] * info["num_nodes"]


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    raise NotImplementedError("not supported: Horovod's timeline in perseus.tensorflow.horovod (HOROVOD_TIMELINE "
                              "is not honoured either)")


def stop_timeline() -> None:
    raise NotImplementedError("not supported: Horovod's timeline in perseus.tensorflow.horovod")
