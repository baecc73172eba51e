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

from .. import basics
from .. import collectives as _collectives
from ..basics import (ccl_built, cross_rank, cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, init,
                     is_initialized, local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built,
                     rank, rocm_built, shutdown, size, start_timeline, stop_timeline)
from ..collectives import (Adasum, Average, ProcessSet, Sum, add_process_set, allreduce as _tf_allreduce,
                          broadcast_variables, global_process_set, remove_process_set)
from ..compression import Compression, Compressor
from ..aggregation import LocalAggregation
from ..gradient_tape import allreduce_gradients, local_layer_list, predivide_check
from ..process_sets import check_registered
from ._versions import _keras, _major, _optimizer_variables


def _class_keras_major(cls: Any) -> int:
    """The Keras major version of the package the optimizer class comes from (keras, tf_keras): the class's own,
    or, for a user's subclass, that of the first Keras class it derives from."""
    major = 0
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in ("keras", "tf_keras"):
            major = _major(sys.modules.get(klass.__module__.split(".")[0]))
            break
    if major not in (2, 3):
        raise ValueError("hvd.keras.DistributedOptimizer wraps a Keras 2 or Keras 3 optimizer, not %s.%s; a "
                         "tf.compat.v1.train.Optimizer goes to hvd.DistributedOptimizer" % (cls.__module__, cls.__name__))
    return major


def DistributedOptimizer(optimizer: Any, name: Optional[str] = None, device_dense: str = "",
                         device_sparse: str = "", compression: Compressor = Compression.none,
                         sparse_as_dense: bool = False, gradient_predivide_factor: float = 1.0, op: Any = Average,
                         backward_passes_per_step: int = 1, average_aggregated_gradients: bool = False,
                         num_groups: int = 0, groups: Any = None, process_set: Any = global_process_set,
                         scale_local_gradients: bool = True) -> Any:
    """The optimizer of the same class and configuration whose apply() (Keras 3) or apply_gradients()
    (Keras 2) first allreduces the gradients."""
    predivide_check(gradient_predivide_factor, op)
    if op == Adasum:
        raise NotImplementedError("not supported: hvd.Adasum in perseus.tensorflow.horovod.keras (use hvd.Average)")
    check_registered(process_set, "hvd.DistributedOptimizer")
    cls = _distributed_class(type(optimizer), compression, op, sparse_as_dense, process_set,
                             gradient_predivide_factor)
    distributed = cls.from_config(optimizer.get_config())
    helper = None
    if backward_passes_per_step != 1:
        def reduce(grads: list) -> list:
            return _reduce(distributed, grads, getattr(distributed, "_perseus_variables", None), compression, op,
                           sparse_as_dense, process_set, gradient_predivide_factor)

        helper = LocalAggregation(backward_passes_per_step, average_aggregated_gradients, sparse_as_dense, reduce)
    object.__setattr__(distributed, "_agg_helper", helper)
    return distributed


def _reduce(optimizer: Any, grads: list, variables: Any, compression: Compressor, op: Any,
            sparse_as_dense: bool, process_set: Any, predivide: float = 1.0) -> list:
    """The gradients allreduced over the process set's ranks (under the engine's wire policy), except those of the
    variables registered local (register_local_var): kept, divided by the set's size with scale_local_gradients
    (Horovod's PartialDistributedOptimizer)."""
    local = getattr(optimizer, "_perseus_local_ids", None)
    if not local or variables is None:
        return allreduce_gradients(grads, compression, op, sparse_as_dense, "keras.grad", process_set, predivide)
    is_local = [id(v) in local for v in variables]
    shared = iter(allreduce_gradients([g for g, mine in zip(grads, is_local) if not mine], compression, op,
                                      sparse_as_dense, "keras.grad", process_set, predivide))
    scale = getattr(optimizer, "_perseus_scale_local", True)
    size = process_set.size() if process_set.included() else 1
    out = []
    for grad, mine in zip(grads, is_local):
        if not mine:
            out.append(next(shared))
        else:
            out.append(grad / size if scale and grad is not None else grad)
    return out


def _register_local_var(self: Any, var: Any) -> None:
    """`var`'s gradient stays this rank's (not allreduced)."""
    local = getattr(self, "_perseus_local_ids", None)
    if local is None:
        local = set()
        object.__setattr__(self, "_perseus_local_ids", local)
    local.add(id(var))


def _distributed_class(base: Any, compression: Compressor, op: Any, sparse_as_dense: bool,
                       process_set: Any = global_process_set, predivide: float = 1.0) -> Any:
    """A subclass of the optimizer class `base` whose apply (Keras 3) / apply_gradients (Keras 2) first
    allreduces the gradients."""
    if getattr(base, "_perseus_distributed", False):
        return base
    process_set = process_set if process_set is not None else global_process_set
    if _class_keras_major(base) >= 3:
        def apply(self: Any, grads: Any, trainable_variables: Any = None) -> Any:
            grads = list(grads)
            variables = trainable_variables if trainable_variables is not None else getattr(
                self, "_trainable_variables", None)
            helper = getattr(self, "_agg_helper", None)
            if helper is None:
                reduced = _reduce(self, grads, variables, compression, op, sparse_as_dense, process_set, predivide)
                return base.apply(self, reduced, trainable_variables)
            if not self.built and variables is not None:
                self.build(variables)  # the slots: not inside the cond below
            object.__setattr__(self, "_perseus_variables", variables)
            aggregated = helper.compute_gradients(grads)
            return helper.apply(lambda: base.apply(self, aggregated, trainable_variables), self.iterations)

        methods = {"apply": apply}
    else:
        def _compute_gradients(self: Any, loss: Any, var_list: Any, grad_loss: Any = None, tape: Any = None) -> Any:
            """Keras 2's (grad, var) pairs, allreduced (Horovod's distributed optimizer does the same); the
            next apply_gradients does not reduce them again."""
            import tensorflow as tf

            variables = list(var_list)
            if tape is None:
                with tf.GradientTape() as tape:
                    value = loss() if callable(loss) else loss
            else:
                value = loss() if callable(loss) else loss
            grads = tape.gradient(value, variables, grad_loss)
            helper = getattr(self, "_agg_helper", None)
            if helper is not None:
                object.__setattr__(self, "_perseus_variables", variables)
                reduced = helper.compute_gradients(list(grads))
            else:
                reduced = _reduce(self, list(grads), variables, compression, op, sparse_as_dense, process_set,
                                  predivide)
            object.__setattr__(self, "_perseus_reduced", True)
            return list(zip(reduced, variables))

        def apply_gradients(self: Any, grads_and_vars: Any, *args: Any, **kw: Any) -> Any:
            pairs = list(grads_and_vars)
            variables = [v for _, v in pairs]
            helper = getattr(self, "_agg_helper", None)
            if getattr(self, "_perseus_reduced", False):  # from _compute_gradients: reduced (or aggregated) already
                object.__setattr__(self, "_perseus_reduced", False)
            elif helper is not None:
                object.__setattr__(self, "_perseus_variables", variables)
                pairs = list(zip(helper.compute_gradients([g for g, _ in pairs]), variables))
            else:
                reduced = _reduce(self, [g for g, _ in pairs], variables, compression, op, sparse_as_dense,
                                  process_set, predivide)
                pairs = list(zip(reduced, variables))
            if helper is None:
                return base.apply_gradients(self, pairs, *args, **kw)
            helper.apply(lambda: base.apply_gradients(self, pairs, *args, **kw), self.iterations)
            return self.iterations

        methods = {"apply_gradients": apply_gradients, "_compute_gradients": _compute_gradients}
    methods.update({"_perseus_distributed": True, "__module__": base.__module__,
                    "register_local_var": _register_local_var})
    return types.new_class(base.__name__, (base,), {}, lambda ns: ns.update(methods))


def PartialDistributedOptimizer(optimizer: Any, name: Optional[str] = None, device_dense: str = "",
                                device_sparse: str = "", compression: Compressor = Compression.none,
                                sparse_as_dense: bool = False, gradient_predivide_factor: float = 1.0,
                                op: Any = Average, backward_passes_per_step: int = 1,
                                average_aggregated_gradients: bool = False, groups: Any = None,
                                process_set: Any = global_process_set, local_layers: Any = None,
                                scale_local_gradients: bool = True) -> Any:
    """DistributedOptimizer whose local_layers' trainable weights keep this rank's gradient (divided by the
    size with scale_local_gradients, as Horovod)."""
    local_layers = local_layer_list(local_layers)
    distributed = DistributedOptimizer(optimizer, name=name, compression=compression, sparse_as_dense=sparse_as_dense,
                                       gradient_predivide_factor=gradient_predivide_factor, op=op,
                                       backward_passes_per_step=backward_passes_per_step,
                                       average_aggregated_gradients=average_aggregated_gradients, groups=groups,
                                       process_set=process_set, scale_local_gradients=scale_local_gradients)
    object.__setattr__(distributed, "_perseus_scale_local", scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            distributed.register_local_var(var)
    return distributed


def _value(tensor: Any) -> Any:
    import tensorflow as tf

    if tf.executing_eagerly():
        return tensor.numpy()
    return tf.compat.v1.keras.backend.get_session().run(tensor)


def allreduce(value: Any, name: Optional[str] = None, average: bool = True, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, op: Any = None, compression: Compressor = Compression.none) -> Any:
    """Horovod's Keras allreduce: the reduction of a value (array, number) over every rank, as a NumPy value."""
    import tensorflow as tf

    if op is None:
        op = Average if average else Sum
    return _value(_tf_allreduce(tf.constant(value), op=op, prescale_factor=prescale_factor,
                                postscale_factor=postscale_factor, compression=compression, name=name))


def allgather(value: Any, name: Optional[str] = None) -> Any:
    import tensorflow as tf

    return _value(_collectives.allgather(tf.constant(value), name=name))


def broadcast(value: Any, root_rank: int, name: Optional[str] = None) -> Any:
    import tensorflow as tf

    return _value(_collectives.broadcast(tf.constant(value), root_rank, name=name))


def reducescatter(value: Any, name: Optional[str] = None, op: Any = Average) -> Any:
    import tensorflow as tf

    return _value(_collectives.reducescatter(tf.constant(value), op=op, name=name))


def broadcast_global_variables(root_rank: int) -> Any:
    """TF1 graphs: root_rank's value assigned to every global variable (run in the Keras session). Eagerly
    (TensorFlow 2) there are no global variables: use BroadcastGlobalVariablesCallback(root_rank) in fit, or
    hvd.broadcast_variables(model.variables, root_rank), as with Horovod."""
    import tensorflow as tf

    if tf.executing_eagerly():
        raise RuntimeError("hvd.keras.broadcast_global_variables() is for TF1 graphs; with eager execution add "
                           "hvd.keras.callbacks.BroadcastGlobalVariablesCallback(%d) to fit's callbacks or call "
                           "hvd.broadcast_variables(model.variables, root_rank=%d)" % (root_rank, root_rank))
    from ..tf1 import broadcast_global_variables as graph_broadcast

    return _value(graph_broadcast(root_rank))


def load_model(filepath: Any, custom_optimizers: Any = None, custom_objects: Any = None,
               compression: Compressor = Compression.none, legacy_opts: bool = False) -> Any:
    """keras.models.load_model, with the saved optimizer (and its state) made distributed: its gradients are
    allreduced over every rank from the first step on."""
    keras, _ = _keras()
    objects = dict(custom_objects or {})
    for optimizer_class in custom_optimizers or []:
        objects.setdefault(optimizer_class.__name__, optimizer_class)
    model = keras.models.load_model(filepath, custom_objects=objects or None)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and not getattr(type(optimizer), "_perseus_distributed", False):
        optimizer.__class__ = _distributed_class(type(optimizer), compression, Average, False)
    return model


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

    @property
    def LearningRateScheduleCallback(self) -> Any:
        return _schedule_class()

    @property
    def BestModelCheckpoint(self) -> Any:
        return _best_checkpoint_class()


callbacks = _Callbacks()
_classes = {}  # type: Dict[Tuple[str, str], Any]


def _broadcast_callback_class() -> Any:
    keras, _ = _keras()
    key = (keras.__name__, "broadcast")
    if key not in _classes:

        class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
            """root_rank's model weights on every rank before the first batch, and the weights and the
            optimizer's state after it (Keras creates the optimizer's slot variables in the first step)."""

            def __init__(self, root_rank: int = 0, device: str = "", local_variables: Any = None) -> None:
                super().__init__()
                self.root_rank = root_rank
                self._local = {id(v) for v in (local_variables or [])}
                self._done_begin = False
                self._done_end = False

            def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
                if not self._done_begin:
                    broadcast_variables(self._shared(self.model.variables), self.root_rank)
                    self._done_begin = True

            def _shared(self, variables: Any) -> list:
                return [v for v in variables if id(v) not in self._local]

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                if not self._done_end:
                    broadcast_variables(self._shared(list(self.model.variables) +
                                                     _optimizer_variables(self.model.optimizer)), self.root_rank)
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
                    logs[key] = float(_tf_allreduce(value, op=Average, name="metric.%s" % key).numpy())

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


def _get_float(value: Any) -> float:
    return float(value.numpy() if hasattr(value, "numpy") else value)


def _schedule_class() -> Any:
    keras, _ = _keras()
    key = (keras.__name__, "schedule")
    if key not in _classes:

        class LearningRateScheduleCallback(keras.callbacks.Callback):
            """From start_epoch to end_epoch (exclusive) the learning rate is initial_lr * multiplier(epoch)
            (a constant multiplier m means m ** (epoch - start_epoch)); staircase: set at each epoch's first
            batch, else at every batch with a fractional epoch. With momentum_correction, a momentum held in a
            variable is scaled by new_lr / old_lr for that batch (Goyal et al.)."""

            def __init__(self, initial_lr: float, multiplier: Any, start_epoch: int = 0, end_epoch: Optional[int] = None,
                         staircase: bool = True, momentum_correction: bool = True,
                         steps_per_epoch: Optional[int] = None) -> None:
                super().__init__()
                if initial_lr is None:
                    raise ValueError("LearningRateScheduleCallback needs initial_lr")
                self.initial_lr = float(initial_lr)
                self.start_epoch = start_epoch
                self.end_epoch = end_epoch
                self.staircase = staircase
                self.momentum_correction = momentum_correction
                self.steps_per_epoch = steps_per_epoch
                self.multiplier = multiplier if callable(multiplier) else (
                    lambda epoch: multiplier ** (epoch - start_epoch))
                self.current_epoch = 0
                self._restore_momentum = None  # type: Optional[float]

            def on_train_begin(self, logs: Any = None) -> None:
                if not self.staircase and not self.steps_per_epoch:
                    steps = (self.params or {}).get("steps")
                    if not steps:
                        raise ValueError("LearningRateScheduleCallback(staircase=False) needs steps_per_epoch (fit gave "
                                         "no step count)")
                    self.steps_per_epoch = steps

            def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
                self.current_epoch = epoch

            def _adjust(self, epoch: float) -> None:
                optimizer = self.model.optimizer
                old = _get_float(optimizer.learning_rate)
                new = self.initial_lr * self.multiplier(epoch)
                _set_learning_rate(optimizer, new)
                momentum = getattr(optimizer, "momentum", None)
                if self.momentum_correction and hasattr(momentum, "assign") and old:
                    self._restore_momentum = _get_float(momentum)
                    momentum.assign(self._restore_momentum * new / old)

            def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
                if self.current_epoch < self.start_epoch or (
                        self.end_epoch is not None and self.current_epoch >= self.end_epoch):
                    return
                if self.staircase:
                    if batch == 0:
                        self._adjust(self.current_epoch)
                else:
                    self._adjust(self.current_epoch + float(batch) / self.steps_per_epoch)

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                if self._restore_momentum is not None:
                    self.model.optimizer.momentum.assign(self._restore_momentum)
                    self._restore_momentum = None

            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                if logs is not None:
                    logs["lr"] = _get_float(self.model.optimizer.learning_rate)

        _classes[key] = LearningRateScheduleCallback
    return _classes[key]


def _best_checkpoint_class() -> Any:
    keras, _ = _keras()
    key = (keras.__name__, "best")
    if key not in _classes:

        class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
            """ModelCheckpoint keeping the best model only (save_best_only=True, the whole model), on every rank
            that gives it a filepath: give one on rank 0 (`filepath if hvd.rank() == 0 else None`) and pass the
            callback only there, as Horovod's recipe does."""

            def __init__(self, monitor: str = "val_loss", verbose: int = 0, mode: str = "auto",
                         save_freq: Any = "epoch", filepath: Optional[str] = None) -> None:
                if filepath is None:
                    raise ValueError("BestModelCheckpoint needs filepath= in perseus (Keras 3's ModelCheckpoint "
                                     "requires one): e.g. filepath='best.keras' on rank 0")
                super().__init__(filepath=filepath, monitor=monitor, verbose=verbose, save_best_only=True,
                                 save_weights_only=False, mode=mode, save_freq=save_freq)

        _classes[key] = BestModelCheckpoint
    return _classes[key]


__all__ = ["init", "shutdown", "is_initialized", "size", "local_size", "cross_size", "rank", "local_rank",
           "cross_rank", "start_timeline", "stop_timeline", "mpi_threads_supported", "mpi_enabled", "mpi_built",
           "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built",
           "Average", "Sum", "Adasum", "Compression", "global_process_set", "ProcessSet", "add_process_set",
           "remove_process_set", "DistributedOptimizer", "PartialDistributedOptimizer",
           "broadcast_global_variables", "allreduce", "allgather", "broadcast", "reducescatter", "load_model",
           "callbacks"]


def __getattr__(name: str) -> Any:
    """hvd.elastic (KerasState and its callbacks): imported on first use, since its callback classes take the
    Keras `tf.keras` is at that moment (TF_USE_LEGACY_KERAS may be set after this module is imported)."""
    if name == "elastic":
        import importlib

        return importlib.import_module(__name__ + ".elastic")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
