"""Horovod's TensorFlow API on the perseus engine: `import perseus.tensorflow.horovod as hvd`.

Collectives are TensorFlow ops (perseus op library, asynchronous kernels calling the engine's C ABI):
they run eagerly, inside tf.function and in TF1 graphs (sessions, MonitoredTrainingSession), with Horovod
0.28's signatures, dtype sets, reduce ops (Average, Sum, Min, Max, Product) and gradients.
`hvd.allreduce` is exact for float32/float64 as Horovod's is; only the gradient paths (DistributedGradientTape,
the DistributedOptimizers) use the engine's fp16 wire policy (PERSEUS_ALLREDUCE_DTYPE). Process sets:
hvd.ProcessSet, add_process_set / remove_process_set, init(process_sets=...), process_set= on every collective
and on the tape and optimizers (process_sets.py). `hvd.keras` is reachable as an attribute (Keras 3, and
Keras 2: tf_keras with TF_USE_LEGACY_KERAS=1 or the keras 2.x package of TensorFlow <= 2.15). Not supported yet
(each raises NotImplementedError saying so): Adasum, hvd.join, the timeline, backward_passes_per_step > 1 on a
tf.compat.v1 optimizer (Keras optimizers aggregate locally: aggregation.py).
`hvd.elastic` (run, TensorFlowState, TensorFlowKerasState) works under elastic perseusrun, eagerly (docs/elastic.md).
"""
from typing import Any

from . import keras
from . import util
from .util import _executing_eagerly
from .basics import (ccl_built, cross_rank, cross_size, cuda_built, ddl_built, engine_info, engine_wire_bytes,
                     gloo_built, gloo_enabled, init, is_homogeneous, is_initialized, local_rank, local_size, mpi_built,
                     mpi_enabled, mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size, start_timeline,
                     stop_timeline)
from .collectives import (Adasum, Average, Max, Min, Product, ProcessSet, Sum, add_process_set, allgather,
                          allgather_object, allreduce, alltoall, broadcast, broadcast_, broadcast_object,
                          broadcast_object_fn, broadcast_variables, global_process_set, grouped_allgather,
                          grouped_allreduce, grouped_reducescatter, join, local_rank_op, local_size_op,
                          process_set_included_op, rank_op, reducescatter, remove_process_set, size_op)
from .collectives import _register_gradients
from .compression import Compression
from .gradient_tape import DistributedGradientTape, PartialDistributedGradientTape
from . import variables
from . import elastic
from . import tf1
from .tf1 import BroadcastGlobalVariablesHook, broadcast_global_variables

_register_gradients()


def DistributedOptimizer(optimizer: Any, name: Any = None, use_locking: bool = False, device_dense: str = "",
                         device_sparse: str = "", compression: Any = Compression.none, sparse_as_dense: bool = False,
                         backward_passes_per_step: int = 1, op: Any = Average, gradient_predivide_factor: float = 1.0,
                         average_aggregated_gradients: bool = False, num_groups: int = 0, groups: Any = None,
                         process_set: Any = global_process_set, scale_local_gradients: bool = True) -> Any:
    """Wraps a tf.compat.v1.train.Optimizer (tf1.DistributedOptimizer) or a Keras optimizer
    (keras.DistributedOptimizer): gradients are averaged (or summed) over every rank."""
    import tensorflow as tf

    from .process_sets import check_registered

    check_registered(process_set, "hvd.DistributedOptimizer")
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        return tf1.DistributedOptimizer(optimizer, name=name, use_locking=use_locking, compression=compression,
                                        sparse_as_dense=sparse_as_dense, op=op,
                                        backward_passes_per_step=backward_passes_per_step, process_set=process_set,
                                        gradient_predivide_factor=gradient_predivide_factor)
    return keras.DistributedOptimizer(optimizer, name=name, compression=compression, sparse_as_dense=sparse_as_dense,
                                      op=op, backward_passes_per_step=backward_passes_per_step,
                                      gradient_predivide_factor=gradient_predivide_factor,
                                      average_aggregated_gradients=average_aggregated_gradients,
                                      num_groups=num_groups, groups=groups, process_set=process_set,
                                      scale_local_gradients=scale_local_gradients)


__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
           "cross_rank", "is_homogeneous", "allreduce", "grouped_allreduce", "allgather", "grouped_allgather",
           "broadcast", "broadcast_", "alltoall", "reducescatter", "grouped_reducescatter", "join",
           "broadcast_variables", "broadcast_object", "broadcast_object_fn", "allgather_object", "size_op", "rank_op",
           "local_size_op", "local_rank_op", "process_set_included_op", "ProcessSet", "global_process_set",
           "add_process_set", "remove_process_set", "Average", "Sum", "Adasum", "Min", "Max", "Product",
           "Compression", "DistributedGradientTape", "PartialDistributedGradientTape", "DistributedOptimizer", "broadcast_global_variables",
           "BroadcastGlobalVariablesHook", "SyncBatchNormalization", "keras", "util", "engine_info", "engine_wire_bytes",
           "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built", "nccl_built",
           "ddl_built", "ccl_built", "cuda_built", "rocm_built", "start_timeline", "stop_timeline", "elastic"]


def __getattr__(name: str) -> Any:
    """hvd.SyncBatchNormalization: its class derives from the Keras tf.keras is, chosen on first use."""
    if name == "SyncBatchNormalization":
        from .sync_batch_norm import layer_class

        return layer_class()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
