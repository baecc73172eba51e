"""hvd.elastic for Keras (Horovod 0.28's horovod.tensorflow.keras.elastic): KerasState, the callbacks that keep
it current during model.fit, and run. Reached as `hvd.elastic` after `import perseus.tensorflow.horovod.keras as
hvd` (or perseus.tensorflow.keras), as `hvd.keras.elastic` after `import perseus.tensorflow.horovod as hvd`:

    state = hvd.elastic.KerasState(model, batch=0, epoch=0)
    callbacks = [hvd.elastic.CommitStateCallback(state), hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.UpdateEpochStateCallback(state)]

    @hvd.elastic.run
    def train(state):
        state.model.fit(data, epochs=epochs - state.epoch, callbacks=callbacks)

The callbacks subclass the Callback of the Keras `tf.keras` is when this module is first imported (Keras 3, or
tf_keras with TF_USE_LEGACY_KERAS=1). TensorFlow 2 eager only, as TensorFlowKerasState.
"""

from typing import Any

from ..elastic import TensorFlowKerasState, run
from ._versions import _keras

_Callback = _keras()[0].callbacks.Callback


class KerasState(TensorFlowKerasState):
    """State of a Keras model, its optimizer (the compiled one unless given) and keyword values."""

    def __init__(self, model: Any, optimizer: Any = None, **kwargs: Any) -> None:
        super().__init__(model, optimizer=optimizer, backend=_keras()[0].backend, **kwargs)


class CommitStateCallback(_Callback):
    """Commits `state` after every `batches_per_commit` batches and at the end of every epoch (a commit may
    raise HostsUpdatedInterrupt out of model.fit: hvd.elastic.run then re-forms the job)."""

    def __init__(self, state: Any, batches_per_commit: int = 1) -> None:
        super().__init__()
        if batches_per_commit < 1:
            raise ValueError("batches_per_commit must be >= 1, not {!r}".format(batches_per_commit))
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs: Any = None) -> None:
        # every rank counts from the same point after a reset, so they commit at the same batches
        self.batches_remaining = self.batches_per_commit

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.state.commit()
            self.batches_remaining = self.batches_per_commit

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.state.commit()


class UpdateBatchStateCallback(_Callback):
    """Keeps `state.batch` at the number of the last finished batch of the epoch (0 again at the end of an
    epoch). With fit's steps_per_epoch, the epoch's step count in `params` is lowered by the batches done before a
    reset, as Horovod does; Keras itself takes an epoch's steps from its data iterator, so the data a retried fit
    gets should skip the batches state.batch says are done."""

    def __init__(self, state: Any) -> None:
        super().__init__()
        self.state = state
        self.steps_per_epoch = None

    def on_train_begin(self, logs: Any = None) -> None:
        self.steps_per_epoch = None

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        steps = self.params.get("steps") if self.params else None
        if steps:
            if self.steps_per_epoch is None:
                self.steps_per_epoch = steps
            self.params["steps"] = self.steps_per_epoch - self.state.batch

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.state.batch = batch

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.state.batch = 0


class UpdateEpochStateCallback(_Callback):
    """Keeps `state.epoch` at the number of epochs finished across resets: fit counts its epochs from 0 in each
    attempt, so the count is offset by state.epoch as it was when fit began (pass epochs=total - state.epoch)."""

    def __init__(self, state: Any) -> None:
        super().__init__()
        self.state = state
        self.initial_epoch = state.epoch

    def on_train_begin(self, logs: Any = None) -> None:
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        # + 1: the finished epoch counts, so a reset after state.batch went back to 0 does not repeat it
        self.state.epoch = self.initial_epoch + epoch + 1


__all__ = ["CommitStateCallback", "KerasState", "UpdateBatchStateCallback", "UpdateEpochStateCallback", "run"]
