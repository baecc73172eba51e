"""hvd.DistributedGradientTape: tape.gradient() returns the gradients allreduced over the ranks of its process set
(every rank by default), under the engine's wire policy."""
from typing import Any, List, Optional

from .collectives import Average, gradient_allreduce, global_process_set
from .compression import Compression, Compressor
from .process_sets import check_registered


def predivide_check(gradient_predivide_factor: float, op: Any) -> None:
    """Horovod's rule: gradient_predivide_factor splits an average only (ValueError otherwise)."""
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average (got op=%r, "
                         "gradient_predivide_factor=%r)" % (op, gradient_predivide_factor))
    if gradient_predivide_factor <= 0:
        raise ValueError("gradient_predivide_factor must be > 0, not %r" % (gradient_predivide_factor,))


def allreduce_gradients(grads: List[Any], compression: Compressor, op: Any, sparse_as_dense: bool,
                        prefix: str, process_set: Any = global_process_set,
                        gradient_predivide_factor: float = 1.0) -> List[Any]:
    """Each gradient (None stays None) allreduced over the process set's ranks under a name from its position
    (the same on every rank), under the engine's wire policy (gradient_allreduce). A rank outside the set keeps
    its own gradients, as in Horovod. gradient_predivide_factor f (op Average only): each gradient is multiplied
    by 1/f before the sum and the average by f after it, as Horovod splits the average."""
    import tensorflow as tf

    predivide_check(gradient_predivide_factor, op)
    if process_set is not None and not process_set.included():
        return list(grads)
    out = []
    for index, grad in enumerate(grads):
        if grad is None:
            out.append(None)
            continue
        if sparse_as_dense and isinstance(grad, tf.IndexedSlices):
            grad = tf.convert_to_tensor(grad)
        out.append(gradient_allreduce(grad, compression, op, "%s.%d" % (prefix, index), process_set,
                                      1.0 / gradient_predivide_factor, gradient_predivide_factor))
    return out


class _DistributedGradientTape:
    """Wraps a tf.GradientTape: everything is the tape's, except gradient()."""

    def __init__(self, tape: Any, compression: Compressor, op: Any, sparse_as_dense: bool,
                 scale_local_gradients: bool = True, process_set: Any = global_process_set,
                 gradient_predivide_factor: float = 1.0) -> None:
        self._tape = tape
        self._predivide = gradient_predivide_factor
        self._process_set = process_set if process_set is not None else global_process_set
        self._compression = compression
        self._op = op
        self._sparse_as_dense = sparse_as_dense
        self._scale_local = scale_local_gradients
        self._local_sources = set()  # type: set

    def register_local_source(self, source: Any) -> None:
        """A source (variable) whose gradient stays this rank's: not allreduced (divided by the size with
        scale_local_gradients, as Horovod does)."""
        self._local_sources.add(source.ref() if hasattr(source, "ref") else id(source))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tape, name)

    def __enter__(self) -> "_DistributedGradientTape":
        self._tape.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._tape.__exit__(*exc)

    def gradient(self, target: Any, sources: Any, output_gradients: Optional[Any] = None, **kwargs: Any) -> Any:
        import tensorflow as tf

        grads = self._tape.gradient(target, sources, output_gradients, **kwargs)
        flat = tf.nest.flatten(grads, expand_composites=False)
        if not self._local_sources:
            reduced = allreduce_gradients(flat, self._compression, self._op, self._sparse_as_dense, "tape.grad",
                                          self._process_set, self._predivide)
            return tf.nest.pack_sequence_as(grads, reduced)
        flat_sources = tf.nest.flatten(sources, expand_composites=False)
        local = [(s.ref() if hasattr(s, "ref") else id(s)) in self._local_sources for s in flat_sources]
        shared = allreduce_gradients([g for g, is_local in zip(flat, local) if not is_local], self._compression,
                                     self._op, self._sparse_as_dense, "tape.grad", self._process_set,
                                     self._predivide)
        size = self._process_set.size() if self._process_set.included() else 1

        out, shared_iter = [], iter(shared)
        for grad, is_local in zip(flat, local):
            if not is_local:
                out.append(next(shared_iter))
            elif grad is None or not self._scale_local:
                out.append(grad)
            elif isinstance(grad, tf.IndexedSlices):
                out.append(tf.IndexedSlices(grad.values / size, grad.indices, grad.dense_shape))
            else:
                out.append(grad / size)
        return tf.nest.pack_sequence_as(grads, out)


def DistributedGradientTape(gradtape: Any, device_dense: str = "", device_sparse: str = "",
                            compression: Compressor = Compression.none, sparse_as_dense: bool = False,
                            op: Any = Average, gradient_predivide_factor: float = 1.0, num_groups: int = 0,
                            groups: Any = None, process_set: Any = None, scale_local_gradients: bool = True) -> Any:
    """A tape whose gradient() averages (op=hvd.Average) or sums the gradients over the ranks of `process_set`
    (every rank by default; a rank outside the set keeps its own)."""
    check_registered(process_set, "hvd.DistributedGradientTape")
    predivide_check(gradient_predivide_factor, op)
    return _DistributedGradientTape(gradtape, compression, op, sparse_as_dense, scale_local_gradients, process_set,
                                    gradient_predivide_factor)


def local_layer_list(local_layers: Any) -> list:
    """Horovod's `local_layers=` argument as a list of layers (None, one layer, or a list or tuple of them)."""
    if local_layers is None:
        return []
    layers = list(local_layers) if isinstance(local_layers, (list, tuple)) else [local_layers]
    for layer in layers:
        if not hasattr(layer, "trainable_weights"):
            raise ValueError("All local layers must be of tf.keras.layers.Layer type, not %r" % (layer,))
    return layers


def PartialDistributedGradientTape(gradtape: Any, device_dense: str = "", device_sparse: str = "",
                                   compression: Compressor = Compression.none, sparse_as_dense: bool = False,
                                   op: Any = Average, gradient_predivide_factor: float = 1.0, num_groups: int = 0,
                                   groups: Any = None, process_set: Any = None, local_layers: Any = None,
                                   scale_local_gradients: bool = True) -> Any:
    """DistributedGradientTape whose local_layers' trainable weights keep this rank's gradient (divided by the
    size with scale_local_gradients, as Horovod)."""
    local_layers = local_layer_list(local_layers)
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups, groups, process_set, scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            tape.register_local_source(var)
    return tape
