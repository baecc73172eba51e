"""Horovod's TensorFlow API on the perseus engine: `import perseus.tensorflow.horovod as hvd`.

Collectives are TensorFlow ops (perseus op library, asynchronous kernels calling the engine's C ABI):
they run eagerly and inside tf.function. `hvd.keras` is reachable as an attribute (Keras 3).
Not supported yet (each raises NotImplementedError saying so): TF1 graph helpers
(broadcast_global_variables, BroadcastGlobalVariablesHook, DistributedOptimizer for tf.compat.v1
optimizers), Keras 2 (tf_keras), Adasum, gradient_predivide_factor, backward_passes_per_step > 1.
"""
from typing import Any

from . import keras
from .basics import (cross_rank, cross_size, engine_info, gloo_enabled, init, is_initialized, local_rank,
                     local_size, mpi_enabled, mpi_threads_supported, nccl_built, rank, shutdown, size)
from .collectives import (Adasum, Average, Sum, allgather, allreduce, broadcast, broadcast_object,
                          broadcast_variables, grouped_allreduce)
from .compression import Compression
from .gradient_tape import DistributedGradientTape


def _not_yet(what: str) -> Any:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("not supported yet: %s in perseus.tensorflow.horovod (TF1 graphs and sessions "
                                  "come with issue 14's next slice); use TF2 eager / tf.function with "
                                  "hvd.DistributedGradientTape or hvd.keras.DistributedOptimizer" % what)
    fail.__name__ = what
    return fail


def DistributedOptimizer(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
    """A Keras optimizer (hvd.keras.DistributedOptimizer); tf.compat.v1 optimizers are not supported yet."""
    import tensorflow as tf

    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        return _not_yet("DistributedOptimizer(tf.compat.v1.train.Optimizer)")()
    return keras.DistributedOptimizer(optimizer, *args, **kwargs)


broadcast_global_variables = _not_yet("broadcast_global_variables")
BroadcastGlobalVariablesHook = _not_yet("BroadcastGlobalVariablesHook")

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
           "cross_rank", "allreduce", "grouped_allreduce", "allgather", "broadcast", "broadcast_variables",
           "broadcast_object", "Average", "Sum", "Adasum", "Compression", "DistributedGradientTape",
           "DistributedOptimizer", "broadcast_global_variables", "BroadcastGlobalVariablesHook", "keras",
           "engine_info", "mpi_threads_supported", "mpi_enabled", "gloo_enabled", "nccl_built"]
