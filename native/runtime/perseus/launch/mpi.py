"""MPI launchers: Open MPI (OMPI_COMM_WORLD_*), MVAPICH2 (MV2_COMM_WORLD_*), MPICH / Intel MPI Hydra (PMI_*, MPI_LOCAL*)."""

from typing import Optional, Sequence

from .model import Reading
from .values import Vars


def _read(v: Vars, launcher: str, rank: str, size: str, local_rank: str, local_size: str) -> Optional[Reading]:
    if not v.has(rank, size):
        return None
    r = Reading(launcher)
    r.put("rank", v.int(rank), v.src(rank))
    r.put("size", v.int(size, minimum=1), v.src(size))
    if v.has(local_rank):
        r.put("local_rank", v.int(local_rank), v.src(local_rank))
    if v.has(local_size):
        r.put("local_size", v.int(local_size, minimum=1), v.src(local_size))
    # No MPI launcher names the node index (OMPI_COMM_WORLD_NODE_RANK is the rank *within* the node);
    # it is derived as rank // local size, true for mpirun's default by-slot mapping.
    return r


def read_openmpi(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    return _read(v, "openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                 "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE")


def read_mvapich(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    return _read(v, "mvapich", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE",
                 "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE")


def read_mpich(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    # Hydra (MPICH, Intel MPI) sets PMI_RANK/PMI_SIZE and MPI_LOCALRANKID/MPI_LOCALNRANKS;
    # srun --mpi=pmi2 sets PMI_RANK/PMI_SIZE only (the Slurm reading then supplies the local numbers).
    return _read(v, "mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS")
