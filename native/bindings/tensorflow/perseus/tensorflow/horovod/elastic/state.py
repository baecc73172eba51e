"""hvd.elastic.TensorFlowState and TensorFlowKerasState: TensorFlow variables (and a Keras model with its
optimizer) committed to host memory, restored from it and synced from rank 0, with the plain values of
ObjectState. TensorFlow 2 with eager execution only: a TF1 graph or session is refused."""

from typing import Any, List, Optional

import numpy as np

from perseus.horovod_kit.elastic import ObjectState

from .. import basics
from ..collectives import broadcast_object, broadcast_variables
from ..keras._versions import _optimizer_variables


def _require_eager(what: str, session: Any = None) -> None:
    import tensorflow as tf

    if session is not None or not tf.executing_eagerly():
        raise NotImplementedError(
            "not supported: {} with a TF1 graph or session in perseus.tensorflow.horovod.elastic; run TensorFlow 2 "
            "eagerly (the default; tf.function inside the training loop is fine) and pass the variables".format(what))


class _Snapshot:
    """Host copies of a list of variables, written back by restore()."""

    def __init__(self) -> None:
        self._saved: List[Any] = []

    def save(self, variables: List[Any]) -> None:
        self._saved = [(var, np.array(var.numpy(), copy=True)) for var in variables]

    def restore(self) -> None:
        for var, value in self._saved:
            var.assign(value)


class TensorFlowState(ObjectState):
    """State of a list of tf.Variables (TensorFlow 2, eager) and keyword values (picklable objects, read as
    attributes). Horovod's `session` (TF1) is refused."""

    def __init__(self, variables: Optional[List[Any]] = None, session: Any = None, **kwargs: Any) -> None:
        _require_eager("hvd.elastic.TensorFlowState", session)
        if not variables:
            raise ValueError("hvd.elastic.TensorFlowState needs variables=[...] under eager execution (TensorFlow 2 "
                             "keeps no global variable collection to default to)")
        self.variables = list(variables)
        self.session = None
        self._snapshot = _Snapshot()
        self._snapshot.save(self.variables)
        super().__init__(bcast_object=broadcast_object, get_rank=basics.rank, **kwargs)

    def save(self) -> None:
        self._snapshot.save(self.variables)
        super().save()

    def restore(self) -> None:
        self._snapshot.restore()
        super().restore()

    def sync(self) -> None:
        broadcast_variables(self.variables, root_rank=0)
        self._snapshot.save(self.variables)
        super().sync()


def _build_optimizer(optimizer: Any, model: Any) -> None:
    """Creates the optimizer's variables now if Keras would create them at the first step: every rank, a
    worker that joins late included, then has the same variables to save and to sync."""
    if hasattr(optimizer, "built"):  # Keras 3
        if not optimizer.built:
            optimizer.build(model.trainable_variables)
    elif hasattr(optimizer, "build"):  # tf_keras's optimizers (build() returns at once when built)
        optimizer.build(model.trainable_variables)
    elif hasattr(optimizer, "_create_all_weights"):  # tf_keras's legacy optimizers
        optimizer._create_all_weights(model.trainable_variables)


class TensorFlowKerasState(ObjectState):
    """State of a Keras model and its optimizer (the model's compiled one by default) and keyword values, read
    as attributes (state.model, state.optimizer, state.epoch, ...). The model must be built. TensorFlow 2,
    eager: `backend` is accepted for Horovod's signature and not used."""

    def __init__(self, model: Any, optimizer: Any = None, backend: Any = None, **kwargs: Any) -> None:
        _require_eager("hvd.elastic.TensorFlowKerasState")
        if not getattr(model, "built", True):
            raise ValueError("the model must be built first: call model.build(input_shape) (or the model on a "
                             "batch) before making its elastic state")
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        if self.optimizer is None:
            raise ValueError("hvd.elastic.TensorFlowKerasState needs an optimizer: pass optimizer= or compile the "
                             "model first")
        self.backend = backend
        _build_optimizer(self.optimizer, model)
        self._snapshot = _Snapshot()
        self._snapshot.save(self._variables())
        super().__init__(bcast_object=broadcast_object, get_rank=basics.rank, **kwargs)

    def _optimizer_state(self) -> List[Any]:
        """The optimizer's variables, and with backward_passes_per_step > 1 the local aggregation's counter and
        accumulators (a restore goes back to the same point of the N-step cycle on every rank)."""
        found = _optimizer_variables(self.optimizer)
        helper = getattr(self.optimizer, "_agg_helper", None)
        if helper is not None:
            found += helper.variables(list(self.model.trainable_variables))
        return found

    def _variables(self) -> List[Any]:
        return list(self.model.variables) + self._optimizer_state()

    def save(self) -> None:
        self._snapshot.save(self._variables())
        super().save()

    def restore(self) -> None:
        self._snapshot.restore()
        super().restore()

    def sync(self) -> None:
        broadcast_variables(list(self.model.variables), root_rank=0)
        broadcast_variables(self._optimizer_state(), root_rank=0)
        self._snapshot.save(self._variables())
        super().sync()
