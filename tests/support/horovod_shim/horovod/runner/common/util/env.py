"""The helper Horovod's process-set test files import from horovod.runner.common.util.env: this rank's number
and the job's size from the launcher's environment (perseusrun exports HOROVOD_RANK / HOROVOD_SIZE)."""

import os

_PAIRS = (("HOROVOD_RANK", "HOROVOD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
          ("PMI_RANK", "PMI_SIZE"), ("RANK", "WORLD_SIZE"))


def get_env_rank_and_size():
    """(rank, size) from the first launcher variable pair that is set, else None."""
    for rank_name, size_name in _PAIRS:
        if rank_name in os.environ and size_name in os.environ:
            return int(os.environ[rank_name]), int(os.environ[size_name])
    return None
