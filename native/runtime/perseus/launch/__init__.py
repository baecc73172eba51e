"""Launch-environment detection: who am I in this job (rank, size, local rank, ...) and who said so.

`detect()` reads the variables (and the appended argv) that launchers set and returns a LaunchEnv whose
`sources` name the variable that gave every number. `perseus.init()`-style callers (the Horovod API,
the DDP hook) use it, `perseus doctor` prints it, `python -m perseus.launch` prints it as JSON.

Precedence (the first launcher whose variables are present wins; innermost launcher first):

 1. torchrun / torch.distributed.launch / perseusrun   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK
 2. horovodrun                                         HOROVOD_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_*, HOROVOD_CROSS_RANK
 3. Open MPI                                           OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK/_LOCAL_SIZE
 4. MVAPICH2                                           MV2_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK/_LOCAL_SIZE
 5. MPICH / Intel MPI (Hydra), srun --mpi=pmi2        PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
 6. Slurm srun tasks                                   SLURM_PROCID, SLURM_STEP_NUM_TASKS/SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID
 7. PaddlePaddle                                       PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM / PADDLE_NUM_TRAINERS (nodes), endpoints
 8. Ascend rank table                                  RANK_TABLE_FILE, RANK_ID, RANK_SIZE, ASCEND_DEVICE_ID
 9. ModelArts PyTorch-GPU (node level)                 argv --init_method tcp://IP:PORT --rank R --world_size N, VC_*/MA_*
10. BytePS / DMLC workers (node level)                 DMLC_ROLE, DMLC_WORKER_ID, DMLC_NUM_WORKER, BYTEPS_LOCAL_*

Every other launcher found is checked against the winner: one that reports the same world size must
report the same rank (and local numbers), one that reports a LARGER world size contradicts it; both
raise LaunchEnvironmentError naming the two sources. One with a smaller world size is an outer launcher
(srun starting torchrun) and is listed in sources["outer_launchers"]. Numbers the winner does not give
are taken from an agreeing launcher, then derived (local rank = rank % local size, node rank =
rank // local size); node-level launchers derive rank = node_rank x local_size + local_rank with the
local size from the launcher or the visible devices (CUDA_/ASCEND_/NVIDIA_VISIBLE_DEVICES).
MASTER_ADDR / MASTER_PORT fill the master address and port when the winner names none.
See README.md beside this file for every variable and where its meaning comes from.
"""

from typing import List

from .model import FIELDS, LaunchEnv, LaunchEnvironmentError, Reading
from .resolve import DETECTORS, detect

__all__: List[str] = ["LaunchEnv", "LaunchEnvironmentError", "Reading", "FIELDS", "detect", "DETECTORS"]
