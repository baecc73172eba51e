"""perseus.mxnet: the MXNet binding of AIACC-Training (shipped in the per-cell perseus_mxnet wheel).

    import perseus.mxnet as hvd                     # Horovod's MXNet API on the perseus engine
    hvd.init(); trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", {...})
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)

    kv = perseus.mxnet.create("dist_sync_perseus")   # the KVStore, where MXNet takes mx.kvstore.create(...)

Importing it checks the library's build manifest against the running mxnet (perseus.mxnet._native).
"""

import pkgutil

# A development checkout keeps these sources apart from the built library; an installed wheel has both
# in one directory and this changes nothing.
__path__ = pkgutil.extend_path(__path__, __name__)

from . import _native  # noqa: E402

_native.load()

from ._world import (cross_rank, cross_size, init, is_initialized, local_rank, local_size, rank,  # noqa: E402
                     shutdown, size)
from .capabilities import (ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled, mpi_built,  # noqa: E402
                           mpi_enabled, mpi_threads_supported, nccl_built, rocm_built, start_timeline,
                           stop_timeline)
from .collectives import (Adasum, Average, Max, Min, Product, Sum, allgather, allreduce, allreduce_,  # noqa: E402
                          alltoall, broadcast, broadcast_, grouped_allgather, grouped_allreduce,
                          grouped_allreduce_, grouped_reducescatter, reducescatter)
from .compression import Compression  # noqa: E402
from .functions import allgather_object, broadcast_object  # noqa: E402
from .process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set  # noqa: E402
from .kvstore import PerseusKVStore, PerseusOp, create  # noqa: E402
from .trainer import DistributedOptimizer, DistributedTrainer, broadcast_parameters  # noqa: E402
from . import sync_batch_norm  # noqa: E402

sync_batch_norm.install()

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
           "cross_rank", "allreduce", "allreduce_", "grouped_allreduce", "grouped_allreduce_", "broadcast",
           "broadcast_", "allgather", "grouped_allgather", "alltoall", "reducescatter", "grouped_reducescatter",
           "allgather_object", "broadcast_object", "broadcast_parameters", "DistributedTrainer",
           "DistributedOptimizer", "Compression", "Average", "Sum", "Adasum", "Min", "Max", "Product",
           "ProcessSet", "global_process_set", "add_process_set", "remove_process_set", "gloo_built",
           "gloo_enabled", "mpi_built", "mpi_enabled", "mpi_threads_supported", "nccl_built", "ddl_built",
           "ccl_built", "cuda_built", "rocm_built", "start_timeline", "stop_timeline", "create", "PerseusKVStore",
           "PerseusOp"]
