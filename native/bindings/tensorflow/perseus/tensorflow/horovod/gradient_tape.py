"""hvd.DistributedGradientTape: tape.gradient() returns the gradients allreduced over every rank."""
from typing import Any, List, Optional

from .collectives import Average, allreduce
from .compression import Compression, Compressor


def allreduce_gradients(grads: List[Any], compression: Compressor, op: Any, sparse_as_dense: bool,
                        prefix: str) -> List[Any]:
    """Each gradient (None stays None) allreduced under a name from its position: the same on every rank."""
    import tensorflow as tf

    out = []
    for index, grad in enumerate(grads):
        if grad is None:
            out.append(None)
            continue
        if sparse_as_dense and isinstance(grad, tf.IndexedSlices):
            grad = tf.convert_to_tensor(grad)
        out.append(allreduce(grad, compression=compression, op=op, name="%s.%d" % (prefix, index)))
    return out


class _DistributedGradientTape:
    """Wraps a tf.GradientTape: everything is the tape's, except gradient()."""

    def __init__(self, tape: Any, compression: Compressor, op: Any, sparse_as_dense: bool) -> None:
        self._tape = tape
        self._compression = compression
        self._op = op
        self._sparse_as_dense = sparse_as_dense

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
        reduced = allreduce_gradients(flat, self._compression, self._op, self._sparse_as_dense, "tape.grad")
        return tf.nest.pack_sequence_as(grads, reduced)


def DistributedGradientTape(gradtape: Any, device_dense: str = "", device_sparse: str = "",
                            compression: Compressor = Compression.none, sparse_as_dense: bool = False,
                            op: Any = Average, gradient_predivide_factor: float = 1.0, num_groups: int = 0,
                            groups: Any = None) -> Any:
    """A tape whose gradient() averages (op=hvd.Average) or sums the gradients over every rank."""
    if gradient_predivide_factor != 1.0:
        raise NotImplementedError("not supported yet: gradient_predivide_factor in perseus.tensorflow.horovod")
    return _DistributedGradientTape(gradtape, compression, op, sparse_as_dense)
