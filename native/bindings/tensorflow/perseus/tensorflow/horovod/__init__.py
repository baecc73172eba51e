"""Horovod's TensorFlow API on the perseus engine: `import perseus.tensorflow.horovod as hvd`.

Collectives are TensorFlow ops (perseus op library, asynchronous kernels calling the engine's C ABI):
they run eagerly, inside tf.function and in TF1 graphs (sessions, MonitoredTrainingSession).
`hvd.keras` is reachable as an attribute (Keras 3, and Keras 2: tf_keras with TF_USE_LEGACY_KERAS=1 or the
keras 2.x package of TensorFlow <= 2.15). Not supported yet (each raises NotImplementedError saying so):
Adasum, gradient_predivide_factor, backward_passes_per_step > 1.
"""
from typing import Any

from . import keras
from .basics import (cross_rank, cross_size, engine_info, engine_wire_bytes, gloo_enabled, init, is_initialized,
                     local_rank, local_size, mpi_enabled, mpi_threads_supported, nccl_built, rank, shutdown, size)
from .collectives import (Adasum, Average, Sum, allgather, allreduce, broadcast, broadcast_object,
                          broadcast_variables, grouped_allreduce)
from .compression import Compression
from .gradient_tape import DistributedGradientTape
from . import variables
from . import tf1
from .tf1 import BroadcastGlobalVariablesHook, broadcast_global_variables


def DistributedOptimizer(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
    """Wraps a tf.compat.v1.train.Optimizer (tf1.DistributedOptimizer) or a Keras optimizer
    (keras.DistributedOptimizer): gradients are averaged (or summed) over every rank."""
    import tensorflow as tf

    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        return tf1.DistributedOptimizer(optimizer, *args, **kwargs)
    return keras.DistributedOptimizer(optimizer, *args, **kwargs)

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
           "cross_rank", "allreduce", "grouped_allreduce", "allgather", "broadcast", "broadcast_variables",
           "broadcast_object", "Average", "Sum", "Adasum", "Compression", "DistributedGradientTape",
           "DistributedOptimizer", "broadcast_global_variables", "BroadcastGlobalVariablesHook", "keras",
           "engine_info", "engine_wire_bytes", "mpi_threads_supported", "mpi_enabled", "gloo_enabled", "nccl_built"]
