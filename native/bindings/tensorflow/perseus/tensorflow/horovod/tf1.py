"""Horovod's TF1 graph helpers: broadcast_global_variables, BroadcastGlobalVariablesHook (sessions,
MonitoredTrainingSession, Estimator hooks) and DistributedOptimizer for tf.compat.v1 optimizers."""
from typing import Any, List, Optional, Tuple

import tensorflow as tf

from .collectives import Average, broadcast_variables, global_process_set
from .compression import Compression, Compressor
from .gradient_tape import allreduce_gradients, predivide_check
from .process_sets import check_registered


def broadcast_global_variables(root_rank: int) -> Any:
    """An op assigning root_rank's value to every global variable (TF1 graph mode)."""
    if tf.executing_eagerly():
        raise RuntimeError("hvd.broadcast_global_variables() builds a TF1 graph op; with eager execution use "
                           "hvd.broadcast_variables(model.variables, root_rank) instead")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """Broadcasts the global variables from root_rank once the session is created (after initialisation)."""

    def __init__(self, root_rank: int, device: str = "") -> None:
        super().__init__()
        self.root_rank = root_rank
        self.bcast_op = None  # type: Optional[Any]

    def begin(self) -> None:
        if self.bcast_op is None or self.bcast_op.graph != tf.compat.v1.get_default_graph():
            self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session: Any, coord: Any) -> None:
        session.run(self.bcast_op)


class _DistributedOptimizer(tf.compat.v1.train.Optimizer):
    """compute_gradients() returns the gradients allreduced over every rank; the rest is the wrapped optimizer's."""

    def __init__(self, optimizer: Any, name: Optional[str], compression: Compressor, op: Any,
                 sparse_as_dense: bool, process_set: Any = global_process_set,
                 gradient_predivide_factor: float = 1.0) -> None:
        super().__init__(name=name or "Distributed%s" % type(optimizer).__name__, use_locking=False)
        self._optimizer = optimizer
        self._compression = compression
        self._op = op
        self._sparse_as_dense = sparse_as_dense
        self._process_set = process_set if process_set is not None else global_process_set
        self._predivide = gradient_predivide_factor

    def compute_gradients(self, *args: Any, **kwargs: Any) -> List[Tuple[Any, Any]]:
        pairs = self._optimizer.compute_gradients(*args, **kwargs)
        grads = allreduce_gradients([g for g, _ in pairs], self._compression, self._op, self._sparse_as_dense,
                                    "tf1.grad", self._process_set, self._predivide)
        return list(zip(grads, [v for _, v in pairs]))

    def apply_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.variables(*args, **kwargs)


def DistributedOptimizer(optimizer: Any, name: Optional[str] = None, use_locking: bool = False,
                         device_dense: str = "", device_sparse: str = "",
                         compression: Compressor = Compression.none, sparse_as_dense: bool = False,
                         op: Any = Average, process_set: Any = global_process_set,
                         gradient_predivide_factor: float = 1.0, **kwargs: Any) -> Any:
    """A tf.compat.v1.train.Optimizer whose gradients are averaged (or summed) over the ranks of `process_set`
    (every rank by default; a rank outside the set keeps its own)."""
    if kwargs.get("backward_passes_per_step", 1) != 1:
        raise NotImplementedError("not supported yet: backward_passes_per_step > 1 with a tf.compat.v1.train.Optimizer "
                                  "in perseus.tensorflow.horovod (Keras optimizers aggregate locally)")
    check_registered(process_set, "hvd.DistributedOptimizer")
    predivide_check(gradient_predivide_factor, op)
    return _DistributedOptimizer(optimizer, name, compression, op, sparse_as_dense, process_set,
                                 gradient_predivide_factor)
