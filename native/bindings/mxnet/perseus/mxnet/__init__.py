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

from ._world import init, is_initialized, local_rank, local_size, rank, shutdown, size  # noqa: E402
from .collectives import allgather, allreduce, allreduce_, broadcast, broadcast_  # noqa: E402
from .kvstore import PerseusKVStore, PerseusOp, create  # noqa: E402
from .trainer import DistributedOptimizer, DistributedTrainer, broadcast_parameters  # noqa: E402
from . import sync_batch_norm  # noqa: E402

sync_batch_norm.install()

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "allreduce",
           "allreduce_", "broadcast", "broadcast_", "allgather", "broadcast_parameters", "DistributedTrainer",
           "DistributedOptimizer", "create", "PerseusKVStore", "PerseusOp"]
