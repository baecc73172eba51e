"""Horovod's TensorFlow collectives as perseus ops (eager, tf.function, TF1 graphs).

Every collective carries a name the ranks agree on: the caller's `name`, else one generated from a
per-process counter, so the same program issues the same names in the same order on every rank (the
engine then agrees the execution order itself)."""
import itertools
import threading
from typing import Any, Dict, List, Optional, Sequence

from .. import _native
from .compression import Compression, Compressor

Average = "average"
Sum = "sum"
Adasum = "adasum"
_counters = {}  # type: Dict[str, Any]
_counter_lock = threading.Lock()


def _auto_name(kind: str, name: Optional[str]) -> str:
    if name:
        return "%s.%s" % (kind, name)
    with _counter_lock:
        counter = _counters.setdefault(kind, itertools.count())
        return "%s.auto.%d" % (kind, next(counter))


def _op_word(op: Any, average: Optional[bool]) -> str:
    if average is not None:
        op = Average if average else Sum
    if op is None:
        op = Average
    if op == Adasum:
        raise NotImplementedError("not supported yet: hvd.Adasum in perseus.tensorflow.horovod (use hvd.Average or hvd.Sum)")
    if op not in (Average, Sum):
        raise ValueError("op must be hvd.Average or hvd.Sum, not %r" % (op,))
    return op


def allreduce(tensor: Any, average: Optional[bool] = None, device_dense: str = "", device_sparse: str = "",
              compression: Compressor = Compression.none, op: Any = None, name: Optional[str] = None,
              prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> Any:
    """The sum or average of `tensor` over every rank. A tf.IndexedSlices is allgathered (values and
    indices, values divided by the size for an average), as Horovod does."""
    import tensorflow as tf

    word = _op_word(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        from . import basics

        values = allgather(tensor.values, name=None if name is None else name + ".values")
        indices = allgather(tensor.indices, name=None if name is None else name + ".indices")
        if word == Average:
            values = values / tf.cast(basics.size(), values.dtype)
        return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    tensor = tf.convert_to_tensor(tensor)
    if prescale_factor != 1.0:
        tensor = tensor * tf.cast(prescale_factor, tensor.dtype)
    compressed, ctx = compression.compress(tensor)
    if word == Average and not compressed.dtype.is_floating:
        raise ValueError("hvd.allreduce: an average of %s is not defined here; use op=hvd.Sum" % compressed.dtype.name)
    reduced = _native.ops().perseus_allreduce(compressed, tensor_name=_auto_name("allreduce", name), reduce_op=word)
    result = compression.decompress(reduced, ctx)
    if postscale_factor != 1.0:
        result = result * tf.cast(postscale_factor, result.dtype)
    return result


def grouped_allreduce(tensors: Sequence[Any], average: Optional[bool] = None, compression: Compressor = Compression.none,
                      op: Any = None, name: Optional[str] = None, **kwargs: Any) -> List[Any]:
    """allreduce of each tensor; the engine fuses the fp32 ones submitted in one negotiation cycle."""
    return [allreduce(t, average=average, compression=compression, op=op,
                      name=None if name is None else "%s.%d" % (name, i), **kwargs) for i, t in enumerate(tensors)]


def allgather(tensor: Any, name: Optional[str] = None) -> Any:
    """Every rank's tensor concatenated along the first dimension (which may differ by rank)."""
    import tensorflow as tf

    return _native.ops().perseus_allgather(tf.convert_to_tensor(tensor), tensor_name=_auto_name("allgather", name))


def broadcast(tensor: Any, root_rank: int, name: Optional[str] = None) -> Any:
    """root_rank's tensor on every rank."""
    import tensorflow as tf

    tensor = tf.convert_to_tensor(tensor)
    if tensor.dtype == tf.bool:
        out = _native.ops().perseus_broadcast(tf.cast(tensor, tf.uint8), tensor_name=_auto_name("broadcast", name),
                                              root_rank=root_rank)
        return tf.cast(out, tf.bool)
    return _native.ops().perseus_broadcast(tensor, tensor_name=_auto_name("broadcast", name), root_rank=root_rank)


def broadcast_variables(variables: Sequence[Any], root_rank: int) -> Any:
    """Assigns root_rank's value to each variable on every rank (eagerly; a grouped op in a graph)."""
    import tensorflow as tf

    assigns = []
    for index, var in enumerate(variables):
        name = "var.%d.%s" % (index, var.name.replace(":", "_"))
        assigns.append(var.assign(broadcast(var, root_rank, name=name)))
    return tf.group(*assigns) if not tf.executing_eagerly() else None


def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None) -> Any:
    """A picklable object from root_rank on every rank."""
    import pickle

    import numpy as np
    import tensorflow as tf

    from . import basics

    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8) if basics.rank() == root_rank else np.zeros(0, np.uint8)
    length = broadcast(tf.constant([payload.size], tf.int64), root_rank, name=(name or "object") + ".length")
    data = payload if basics.rank() == root_rank else np.zeros(int(length.numpy()[0]), np.uint8)
    out = broadcast(tf.constant(data), root_rank, name=(name or "object") + ".data")
    return pickle.loads(out.numpy().tobytes())
