"""hvd.init / hvd.shutdown of perseus.mxnet: the job (_job.py) and the process sets registered with it; the rank
numbers and the engine are _job's, named here too."""
from typing import Any

from perseus.horovod_kit import process_sets as _sets

from . import process_sets as _process_sets
from ._job import (_basics, cross_rank, cross_size, engine, is_initialized, local_rank, local_size,  # noqa: F401
                   rank, size)


def init(comm=None, process_sets=None):
    # type: (Any, Any) -> None
    """Joins the job (numbers from perseusrun / mpirun / torchrun-style variables, see perseus.launch); a second
    call is a no-op. process_sets: sets (ProcessSet or rank lists) registered now, or "dynamic" (Horovod's
    names; sets can be added later either way). comm (an MPI communicator) is not supported."""
    if comm is not None:
        raise NotImplementedError("not supported: hvd.init(comm=...) (an MPI communicator); perseus.mxnet runs every "
                                  "rank the launcher started: use process sets for subsets")
    _basics.init()
    _sets.add_at_init(process_sets, _process_sets.add_process_set)


def shutdown():
    # type: () -> None
    """Leaves the job (every rank must call it); init() may be called again afterwards."""
    _process_sets.close_all()
    _basics.shutdown()
