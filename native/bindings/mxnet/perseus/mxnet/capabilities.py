"""Horovod's capability queries, answered for perseus.mxnet: what carries its collectives (the engine's Gloo,
on the host), what it was built with, and the Horovod features it does not offer (each says so)."""
from . import _native


def gloo_built():
    # type: () -> bool
    return True  # the engine carries every collective over Gloo (shared memory inside a node)


def gloo_enabled():
    # type: () -> bool
    return True


def mpi_built():
    # type: () -> bool
    return False  # mpirun can start a job (the bootstrap plugins), but no collective runs over MPI


def mpi_enabled():
    # type: () -> bool
    return False


def mpi_threads_supported():
    # type: () -> bool
    return False


def nccl_built():
    # type: () -> int
    return 0  # perseus.mxnet reduces NDArrays on the host: no NCCL


def ddl_built():
    # type: () -> bool
    return False


def ccl_built():
    # type: () -> bool
    return False


def rocm_built():
    # type: () -> bool
    return False


def cuda_built():
    # type: () -> bool
    """Whether this wheel was built for a CUDA build of MXNet (its build manifest)."""
    return bool(_native.read_manifest().get("mxnet_cuda"))


def start_timeline(file_path, mark_cycles=False):
    # type: (str, bool) -> None
    raise NotImplementedError("not supported: Horovod's timeline in perseus.mxnet (%s); perseus doctor and "
                              "PERSEUS_PERF_CHECK_N_STEPS report the job instead" % file_path)


def stop_timeline():
    # type: () -> None
    raise NotImplementedError("not supported: Horovod's timeline in perseus.mxnet")
