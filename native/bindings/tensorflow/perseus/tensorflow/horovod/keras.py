"""hvd.keras (reachable as an attribute after `import perseus.tensorflow.horovod as hvd`): a Keras
DistributedOptimizer and the callbacks of Horovod's Keras recipe, for the Keras that `tf.keras` is:
Keras 3 (keras >= 3, the default of TensorFlow >= 2.16) or Keras 2 (tf_keras with TF_USE_LEGACY_KERAS=1
on TensorFlow >= 2.16, the `keras` 2.x package before; new and legacy optimizers).

DistributedOptimizer follows the Keras of the optimizer it wraps: Keras 3's apply() or Keras 2's
apply_gradients() first allreduces the gradients. The callbacks subclass `tf.keras.callbacks.Callback`
(the Keras `model.fit` runs with), chosen when a callback class is first asked for.

The perseus ops have no XLA kernel: never compile the model with jit_compile=True (Keras 3's default
"auto" resolves to no XLA for a model with this optimizer, checked with Keras 3 on TensorFlow 2.21)."""
import sys
import types
from typing import Any, Dict, Optional, Tuple

from . import basics
from .collectives import Average, allreduce, broadcast_variables
from .compression import Compression, Compressor
from .gradient_tape import allreduce_gradients


def _major(package: Any) -> int:
    return int(str(getattr(package, "__version__", "0")).split(".")[0])


def _keras() -> Tuple[Any, int]:
    """The Keras module `tf.keras` is (Keras 3, or tf_keras / keras 2.x) and its major version."""
    import tensorflow as tf

    module = tf.keras
    name = getattr(module, "__name__", "") or type(module).__module__
    package = sys.modules.get(name.split(".")[0])
    major = _major(package)
    if major not in (2, 3):
        raise NotImplementedError("not supported: Keras %s (tf.keras is %s) in perseus.tensorflow.horovod.keras; "
                                  "Keras 2 (tf_keras, keras 2.x) and Keras 3 are"
                                  % (getattr(package, "__version__", "?"), name))
    return module, major


def _optimizer_keras_major(optimizer: Any) -> int:
    """The Keras major version of the package the optimizer's class comes from (keras, tf_keras)."""
    package = sys.modules.get(type(optimizer).__module__.split(".")[0])
    major = _major(package)
    if major not in (2, 3):
        raise ValueError("hvd.keras.DistributedOptimizer wraps a Keras 2 or Keras 3 optimizer, not %s.%s; a "
                         "tf.compat.v1.train.Optimizer goes to hvd.DistributedOptimizer"
                         % (type(optimizer).__module__, type(optimizer).__name__))
    return major


def DistributedOptimizer(optimizer: Any, name: Optional[str] = None, device_dense: str = "",
                         device_sparse: str = "", compression: Compressor = Compression.none,
                         sparse_as_dense: bool = False, op: Any = Average, **kwargs: Any) -> Any:
    """The optimizer of the same class and configuration whose apply() (Keras 3) or apply_gradients()
    (Keras 2) first allreduces the gradients."""
    if kwargs.get("backward_passes_per_step", 1) != 1:
        raise NotImplementedError("not supported yet: backward_passes_per_step > 1 in perseus.tensorflow.horovod.keras")
    base = type(optimizer)
    if _optimizer_keras_major(optimizer) >= 3:
        def apply(self: Any, grads: Any, trainable_variables: Any = None) -> Any:
            reduced = allreduce_gradients(list(grads), compression, op, sparse_as_dense, "keras.grad")
            return base.apply(self, reduced, trainable_variables)

        methods = {"apply": apply}
    else:
        def apply_gradients(self: Any, grads_and_vars: Any, *args: Any, **kw: Any) -> Any:
            pairs = list(grads_and_vars)
            reduced = allreduce_gradients([g for g, _ in pairs], compression, op, sparse_as_dense, "keras.grad")
            return base.apply_gradients(self, list(zip(reduced, [v for _, v in pairs])), *args, **kw)

        methods = {"apply_gradients": apply_gradients}
    methods.update({"_perseus_distributed": True, "__module__": base.__module__})
    cls = types.new_class(base.__name__, (base,), {}, lambda ns: ns.update(methods))
    return cls.from_config(optimizer.get_config())


def _optimizer_variables(optimizer: Any) -> list:
    """Keras 3 and Keras 2's new optimizers: a `variables` property; Keras 2's legacy ones: a method."""
    found = optimizer.variables
    return list(found() if callable(found) else found)


def _set_learning_rate(optimizer: Any, value: float) -> None:
    current = optimizer.learning_rate
    if not hasattr(current, "assign"):
        raise ValueError("LearningRateWarmupCallback sets the optimizer's learning rate, which is %r here (a "
                         "schedule?): give the optimizer a float learning rate" % (current,))
    current.assign(value)


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
_classes = {}  # type: Dict[Tuple[str, str], Any]


def _broadcast_callback_class() -> Any:
    keras, _ = _keras()
    key = (keras.__name__, "broadcast")
    if key not in _classes:

        class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
            """root_rank's model weights on every rank before the first batch, and the weights and the
            optimizer's state after it (Keras creates the optimizer's slot variables in the first step)."""

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
                    broadcast_variables(list(self.model.variables) + _optimizer_variables(self.model.optimizer),
                                        self.root_rank)
                    self._done_end = True

        _classes[key] = BroadcastGlobalVariablesCallback
    return _classes[key]


def _metric_average_class() -> Any:
    keras, _ = _keras()
    key = (keras.__name__, "metric")
    if key not in _classes:

        class MetricAverageCallback(keras.callbacks.Callback):
            """At each epoch's end, every logged metric becomes its average over the ranks."""

            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                import tensorflow as tf

                if not logs:
                    return
                for key in sorted(logs):
                    value = tf.constant(float(logs[key]), tf.float64)
                    logs[key] = float(allreduce(value, op=Average, name="metric.%s" % key).numpy())

        _classes[key] = MetricAverageCallback
    return _classes[key]


def _warmup_class() -> Any:
    keras, _ = _keras()
    key = (keras.__name__, "warmup")
    if key not in _classes:

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
                _set_learning_rate(self.model.optimizer, lr)

            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                if self.verbose and epoch == self.warmup_epochs - 1 and basics.rank() == 0:
                    print("Epoch %d: finished gradual learning rate warmup to %g." % (epoch + 1, self.initial_lr))

        _classes[key] = LearningRateWarmupCallback
    return _classes[key]
