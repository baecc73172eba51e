"""hvd.keras (reachable as an attribute after `import perseus.tensorflow.horovod as hvd`): a Keras
DistributedOptimizer and the callbacks of Horovod's Keras recipe, for Keras 3 (keras >= 3, the default
of TensorFlow >= 2.16).

The perseus ops have no XLA kernel: never compile the model with jit_compile=True (Keras 3's default
"auto" resolves to no XLA for a model with this optimizer, checked with Keras 3 on TensorFlow 2.21)."""
import types
from typing import Any, Dict, Optional

from . import basics
from .collectives import Average, allreduce, broadcast_variables
from .compression import Compression, Compressor
from .gradient_tape import allreduce_gradients


def _keras() -> Any:
    import keras

    major = int(keras.__version__.split(".")[0])
    if major < 3:
        raise NotImplementedError("not supported yet: Keras %s (tf_keras / TF_USE_LEGACY_KERAS=1) in "
                                  "perseus.tensorflow.horovod.keras; Keras 3 is" % keras.__version__)
    return keras


def DistributedOptimizer(optimizer: Any, name: Optional[str] = None, device_dense: str = "",
                         device_sparse: str = "", compression: Compressor = Compression.none,
                         sparse_as_dense: bool = False, op: Any = Average, **kwargs: Any) -> Any:
    """The optimizer of the same class and configuration whose apply() first allreduces the gradients."""
    _keras()
    if kwargs.get("backward_passes_per_step", 1) != 1:
        raise NotImplementedError("not supported yet: backward_passes_per_step > 1 in perseus.tensorflow.horovod.keras")
    base = type(optimizer)

    def apply(self: Any, grads: Any, trainable_variables: Any = None) -> Any:
        reduced = allreduce_gradients(list(grads), compression, op, sparse_as_dense, "keras.grad")
        return base.apply(self, reduced, trainable_variables)

    cls = types.new_class(base.__name__, (base,), {}, lambda ns: ns.update({"apply": apply, "_perseus_distributed": True}))
    return cls.from_config(optimizer.get_config())


class _Callbacks:
    """hvd.keras.callbacks: BroadcastGlobalVariablesCallback, MetricAverageCallback, LearningRateWarmupCallback."""

    @property
    def BroadcastGlobalVariablesCallback(self) -> Any:
        return _broadcast_callback_class()

    @property
    def MetricAverageCallback(self) -> Any:
        return _metric_average_class()

    @property
    def LearningRateWarmupCallback(self) -> Any:
        return _warmup_class()


callbacks = _Callbacks()
_classes = {}  # type: Dict[str, Any]


def _broadcast_callback_class() -> Any:
    if "broadcast" not in _classes:
        keras = _keras()

        class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
            """root_rank's model weights on every rank before the first batch, and the weights and the
            optimizer's state after it (Keras 3 creates the optimizer's variables in the first step)."""

            def __init__(self, root_rank: int = 0, device: str = "") -> None:
                super().__init__()
                self.root_rank = root_rank
                self._done_begin = False
                self._done_end = False

            def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
                if not self._done_begin:
                    broadcast_variables(self.model.variables, self.root_rank)
                    self._done_begin = True

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                if not self._done_end:
                    broadcast_variables(list(self.model.variables) + list(self.model.optimizer.variables), self.root_rank)
                    self._done_end = True

        _classes["broadcast"] = BroadcastGlobalVariablesCallback
    return _classes["broadcast"]


def _metric_average_class() -> Any:
    if "metric" not in _classes:
        keras = _keras()

        class MetricAverageCallback(keras.callbacks.Callback):
            """At each epoch's end, every logged metric becomes its average over the ranks."""

            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                import tensorflow as tf

                if not logs:
                    return
                for key in sorted(logs):
                    value = tf.constant(float(logs[key]), tf.float64)
                    logs[key] = float(allreduce(value, op=Average, name="metric.%s" % key).numpy())

        _classes["metric"] = MetricAverageCallback
    return _classes["metric"]


def _warmup_class() -> Any:
    if "warmup" not in _classes:
        keras = _keras()

        class LearningRateWarmupCallback(keras.callbacks.Callback):
            """Goes from initial_lr / size to initial_lr over warmup_epochs (Goyal et al.), per batch."""

            def __init__(self, initial_lr: float, warmup_epochs: int = 5, momentum_correction: bool = True,
                         steps_per_epoch: Optional[int] = None, verbose: int = 0) -> None:
                super().__init__()
                self.initial_lr = float(initial_lr)
                self.warmup_epochs = warmup_epochs
                self.steps_per_epoch = steps_per_epoch
                self.verbose = verbose
                self._epoch = 0

            def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
                self._epoch = epoch

            def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
                if self._epoch >= self.warmup_epochs:
                    return
                steps = self.steps_per_epoch or self.params.get("steps")
                if not steps:
                    raise ValueError("LearningRateWarmupCallback needs steps_per_epoch (fit gave no step count)")
                epoch = self._epoch + float(batch) / steps
                size = basics.size()
                lr = self.initial_lr * (epoch * (size - 1) / self.warmup_epochs + 1) / size
                self.model.optimizer.learning_rate.assign(lr)

            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                if self.verbose and epoch == self.warmup_epochs - 1 and basics.rank() == 0:
                    print("Epoch %d: finished gradual learning rate warmup to %g." % (epoch + 1, self.initial_lr))

        _classes["warmup"] = LearningRateWarmupCallback
    return _classes["warmup"]
