"""perseus.torch.horovod: the Horovod PyTorch API on perseus (`import perseus.torch.horovod as hvd`).

Every collective runs on perseus's native engine (Gloo over TCP, shared memory inside a node; CUDA tensors on
its device path: NCCL, or Gloo with on-device fp16); gradients of hvd.DistributedOptimizer go through its
fused, compressed allreduce (see perseus.torch.horovod.optimizer), hvd.allreduce is exact.
"""

from perseus.horovod_kit.errors import (  # noqa: F401
    HorovodInternalError,
    HorovodVersionMismatchError,
    HostsUpdatedInterrupt,
    NotSupportedByPerseus,
)
from perseus.horovod_kit.process_sets import ProcessSet, global_process_set  # noqa: F401
from perseus.torch.horovod.basics import (  # noqa: F401
    HorovodNotInitialized,
    add_process_set,
    ccl_built,
    cross_rank,
    cross_size,
    cuda_built,
    ddl_built,
    gloo_built,
    gloo_enabled,
    init,
    is_homogeneous,
    is_initialized,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    nccl_built,
    rank,
    remove_process_set,
    rocm_built,
    shutdown,
    size,
    start_timeline,
    stop_timeline,
)
from perseus.torch.horovod.collectives import (  # noqa: F401
    Adasum,
    Average,
    HorovodCollectiveError,
    Max,
    Min,
    Product,
    Sum,
    allgather,
    allgather_async,
    allreduce,
    allreduce_,
    allreduce_async,
    allreduce_async_,
    alltoall,
    alltoall_async,
    barrier,
    broadcast,
    broadcast_,
    broadcast_async,
    broadcast_async_,
    grouped_allgather,
    grouped_allgather_async,
    grouped_allreduce,
    grouped_allreduce_,
    grouped_allreduce_async,
    grouped_allreduce_async_,
    grouped_reducescatter,
    grouped_reducescatter_async,
    join,
    poll,
    reducescatter,
    reducescatter_async,
    sparse_allreduce_async,
    synchronize,
)
from perseus.torch.horovod.compression import Compression, Compressor  # noqa: F401
from perseus.torch.horovod.functions import (  # noqa: F401
    allgather_object,
    broadcast_object,
    broadcast_optimizer_state,
    broadcast_parameters,
)
from perseus.torch.horovod.optimizer import DistributedOptimizer  # noqa: F401
from perseus.torch.horovod.sync_batch_norm import SyncBatchNorm  # noqa: F401
from perseus.torch.horovod import elastic  # noqa: F401,E402  (hvd.elastic.run, TorchState, ElasticSampler)

__all__ = [
    "Adasum", "Average", "Compression", "Compressor", "DistributedOptimizer", "HorovodCollectiveError",
    "HorovodInternalError", "HorovodNotInitialized", "HorovodVersionMismatchError", "HostsUpdatedInterrupt", "Max",
    "Min", "NotSupportedByPerseus", "ProcessSet", "Product", "Sum", "SyncBatchNorm", "add_process_set", "allgather",
    "allgather_async", "allgather_object", "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "alltoall", "alltoall_async", "barrier", "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "broadcast_object", "broadcast_optimizer_state", "broadcast_parameters", "ccl_built", "cross_rank", "cross_size", "elastic",
    "cuda_built", "ddl_built", "global_process_set", "gloo_built", "gloo_enabled", "grouped_allgather",
    "grouped_allgather_async", "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "grouped_reducescatter", "grouped_reducescatter_async", "init", "is_homogeneous",
    "is_initialized", "join", "local_rank", "local_size", "mpi_built", "mpi_enabled", "mpi_threads_supported",
    "nccl_built", "poll", "rank", "reducescatter", "reducescatter_async", "remove_process_set", "rocm_built",
    "shutdown", "size", "sparse_allreduce_async", "start_timeline", "stop_timeline", "synchronize",
]
