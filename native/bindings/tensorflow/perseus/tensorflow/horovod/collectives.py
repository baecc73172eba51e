"""Horovod 0.28's TensorFlow collectives as perseus ops (eager, tf.function, TF1 graphs), with Horovod's
signatures, dtype sets, reduce ops and gradients.

Every collective carries a name the ranks agree on: the caller's `name`, else one generated from a
per-process counter, so the same program issues the same names in the same order on every rank (the
engine then agrees the execution order itself). The engine compares each collective's kind, dtype, shape
(all dimensions, not only the element count) and reduce op across ranks: a difference fails on every rank
with tf.errors.FailedPreconditionError, as with Horovod. A collective one rank refuses by itself (a dtype
outside Horovod's set, a bad split) is refused on every rank at once: the refusing rank first meets the
others under the collective's name (a barrier, which fails their collective as a mismatch), then raises.

What the engine does not do natively is composed from its collectives: Min, Max and Product are an
allgather reduced locally; integer Average is a Sum divided afterwards (Horovod's integer arithmetic);
alltoall and reducescatter are built on allgather and allreduce. Process sets other than the global one
are not supported yet (each raises NotImplementedError naming process_set=).
"""
import itertools
import pickle
import threading
import warnings
from typing import Any, Dict, List, Optional, Sequence

from .. import _native
from .compression import Compression, Compressor

Average = "average"
Sum = "sum"
Adasum = "adasum"
Min = "min"
Max = "max"
Product = "product"
_REDUCE_OPS = (Average, Sum, Adasum, Min, Max, Product)

_counters = {}  # type: Dict[str, Any]
_counter_lock = threading.Lock()


class ProcessSet:
    """Horovod's process set handle. Only the global set (every rank, id 0) exists in perseus so far."""

    def __init__(self, ranks_or_comm: Any = None) -> None:
        self.process_set_id = None  # type: Optional[int]
        self.ranks = ranks_or_comm

    def size(self) -> int:
        from . import basics

        _require_global(self)
        return basics.size()

    def rank(self) -> int:
        from . import basics

        _require_global(self)
        return basics.rank()

    def included(self) -> bool:
        _require_global(self)
        return True

    def __repr__(self) -> str:
        return "ProcessSet(process_set_id=%r, ranks=%r)" % (self.process_set_id, self.ranks)


global_process_set = ProcessSet()
global_process_set.process_set_id = 0


def _require_global(process_set: Any) -> None:
    if process_set is None or process_set is global_process_set or getattr(process_set, "process_set_id", None) == 0:
        return
    raise NotImplementedError(
        "not supported yet: process_set=%r in perseus.tensorflow.horovod (process sets are a separate issue); "
        "leave process_set out (hvd.global_process_set, every rank)" % (process_set,))


def add_process_set(process_set: Any) -> Any:
    raise NotImplementedError("not supported yet: hvd.add_process_set in perseus.tensorflow.horovod (process sets "
                              "are a separate issue); every collective runs on hvd.global_process_set")


def remove_process_set(process_set: Any) -> bool:
    raise NotImplementedError("not supported yet: hvd.remove_process_set in perseus.tensorflow.horovod (process "
                              "sets are a separate issue)")


def _dtypes() -> Any:
    import tensorflow as tf

    reduce_types = (tf.uint8, tf.int8, tf.int32, tf.int64, tf.float16, tf.bfloat16, tf.float32, tf.float64)
    return reduce_types, reduce_types + (tf.uint16, tf.int16, tf.bool)


def reset_names() -> None:
    """Generated names start from 0 again (hvd.init() of a new engine)."""
    with _counter_lock:
        _counters.clear()


def _auto_name(kind: str, name: Optional[str]) -> str:
    if name:
        return "%s.%s" % (kind, name)
    with _counter_lock:
        counter = _counters.setdefault(kind, itertools.count())
        return "%s.auto.%d" % (kind, next(counter))


def _meet_refusal(full_name: str) -> None:
    """This rank refuses the collective `full_name` by itself: a barrier under that name makes the other
    ranks' collective of the name fail at once (a mismatch) instead of waiting out GLOO_TIMEOUT_SECONDS."""
    from . import basics

    engine = basics._engine_handle
    if engine is None:
        return
    try:
        engine.barrier(full_name)
    except Exception:  # the others submitted the collective: a mismatch, expected; the caller raises its error
        pass


def _refuse(full_name: str, error: BaseException) -> None:
    _meet_refusal(full_name)
    raise error


def _check_dtype(tensor: Any, allowed: Sequence[Any], full_name: str, call: Any) -> None:
    """A dtype outside Horovod's set: negotiated, then TensorFlow's own op-definition error (`call` runs the op)."""
    if tensor.dtype.base_dtype not in allowed:
        _meet_refusal(full_name)
        call()  # raises TensorFlow's error naming the allowed dtypes
        raise TypeError("hvd: dtype %s is not supported here (allowed: %s)"
                        % (tensor.dtype.name, ", ".join(t.name for t in allowed)))


def _op_word(op: Any, average: Optional[bool]) -> str:
    if op is not None and average is not None:
        raise ValueError("The op parameter supersedes average. Please provide only one of them.")
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed in v1.0",
                      DeprecationWarning)
        op = Average if average else Sum
    if op is None:
        op = Average
    if op not in _REDUCE_OPS:
        raise ValueError("op must be one of hvd.Average, hvd.Sum, hvd.Min, hvd.Max, hvd.Product (hvd.Adasum is not "
                         "supported), not %r" % (op,))
    return op


def _adasum_refused() -> NotImplementedError:
    return NotImplementedError("not supported yet: hvd.Adasum in perseus.tensorflow.horovod (use hvd.Average or hvd.Sum)")


def _scale(tensor: Any, factor: float) -> Any:
    """Horovod's pre/postscale: integers through float64, truncated back; floats in their own dtype."""
    import tensorflow as tf

    if factor == 1.0:
        return tensor
    if tensor.dtype.is_floating:
        return tensor * tf.cast(factor, tensor.dtype)
    return tf.cast(tf.cast(tensor, tf.float64) * factor, tensor.dtype)


def _size() -> int:
    from . import basics

    return basics.size()


def _rank() -> int:
    from . import basics

    return basics.rank()


def _allreduce(tensor: Any, op: str, prescale_factor: float, postscale_factor: float, name: Optional[str]) -> Any:
    import tensorflow as tf

    ops = _native.ops()
    full = _auto_name("allreduce", name)
    allowed, _ = _dtypes()
    _check_dtype(tensor, allowed, full, lambda: ops.perseus_allreduce(tensor, tensor_name=full, reduce_op="sum"))
    tensor = _scale(tensor, prescale_factor)
    if op in (Min, Max, Product):
        gathered = ops.perseus_allgather(tf.expand_dims(tensor, 0), tensor_name=full)
        reduce = {Min: tf.reduce_min, Max: tf.reduce_max, Product: tf.reduce_prod}[op]
        if tensor.dtype in (tf.uint8, tf.int8) and op == Product:  # no int8 kernel of reduce_prod: exact via int32
            out = tf.cast(reduce(tf.cast(gathered, tf.int32), axis=0), tensor.dtype)
        else:
            out = reduce(gathered, axis=0)
    elif op == Average and not tensor.dtype.is_floating:
        out = _scale(ops.perseus_allreduce(tensor, tensor_name=full, reduce_op=Sum), 1.0 / _size())
    else:
        out = ops.perseus_allreduce(tensor, tensor_name=full, reduce_op=op)
    return _scale(out, postscale_factor)


def allreduce(tensor: Any, average: Optional[bool] = None, device_dense: str = "", device_sparse: str = "",
              compression: Compressor = Compression.none, op: Any = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, name: Optional[str] = None, process_set: Any = global_process_set,
              ignore_name_scope: bool = False) -> Any:
    """The reduction (op: Average by default, Sum, Min, Max, Product) of `tensor` over every rank. A
    tf.IndexedSlices is allgathered (values and indices, values divided by the size for an average), as
    Horovod does."""
    import tensorflow as tf

    try:
        op = _op_word(op, average)
    except ValueError as error:  # a refusal of this rank alone: the others fail at once too
        _refuse(_auto_name("allreduce", name), error)
    _require_global(process_set)
    if isinstance(tensor, tf.IndexedSlices):
        if op == Adasum:
            raise NotImplementedError("not supported: hvd.Adasum of a tf.IndexedSlices (nor Adasum at all in "
                                      "perseus); pass sparse_as_dense=True and use hvd.Average")
        if op not in (Sum, Average):
            raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
        if prescale_factor != 1.0 or postscale_factor != 1.0:
            raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
        values = allgather(tensor.values, name=None if name is None else name + ".values")
        indices = allgather(tensor.indices, name=None if name is None else name + ".indices")
        if op == Average:
            values = values / tf.cast(_size(), values.dtype)
        return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    if op == Adasum:
        _refuse(_auto_name("allreduce", name), _adasum_refused())
    tensor = tf.convert_to_tensor(tensor)
    compressed, ctx = compression.compress(tensor)
    reduced = _allreduce(compressed, op, prescale_factor, postscale_factor, name)
    return compression.decompress(reduced, ctx)


def grouped_allreduce(tensors: Sequence[Any], average: Optional[bool] = None, device_dense: str = "",
                      device_sparse: str = "", compression: Compressor = Compression.none, op: Any = None,
                      prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                      process_set: Any = global_process_set, ignore_name_scope: bool = False,
                      name: Optional[str] = None) -> List[Any]:
    """allreduce of each tensor (the engine fuses those submitted in one negotiation cycle)."""
    import tensorflow as tf

    if not tensors:
        return tensors
    op = _op_word(op, average)
    _require_global(process_set)
    if any(isinstance(t, tf.IndexedSlices) for t in tensors):
        if op == Adasum:
            raise NotImplementedError("not supported: hvd.Adasum of a tf.IndexedSlices; pass sparse_as_dense=True")
        if op not in (Sum, Average):
            raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
        if prescale_factor != 1.0 or postscale_factor != 1.0:
            raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
    return [allreduce(t, compression=compression, op=op, prescale_factor=prescale_factor,
                      postscale_factor=postscale_factor, name=None if name is None else "%s.%d" % (name, i))
            for i, t in enumerate(tensors)]


def allgather(tensor: Any, name: Optional[str] = None, ignore_name_scope: bool = False,
              process_set: Any = global_process_set) -> Any:
    """Every rank's tensor concatenated along the first dimension (which may differ by rank)."""
    import tensorflow as tf

    _require_global(process_set)
    ops = _native.ops()
    tensor = tf.convert_to_tensor(tensor)
    full = _auto_name("allgather", name)
    _, allowed = _dtypes()
    _check_dtype(tensor, allowed, full, lambda: ops.perseus_allgather(tensor, tensor_name=full))
    return ops.perseus_allgather(tensor, tensor_name=full)


def grouped_allgather(tensors: Sequence[Any], name: Optional[str] = None, ignore_name_scope: bool = False,
                      process_set: Any = global_process_set) -> List[Any]:
    _require_global(process_set)
    return [allgather(t, name=None if name is None else "%s.%d" % (name, i)) for i, t in enumerate(tensors)]


def broadcast(tensor: Any, root_rank: int, name: Optional[str] = None, ignore_name_scope: bool = False,
              process_set: Any = global_process_set) -> Any:
    """root_rank's tensor on every rank."""
    import tensorflow as tf

    _require_global(process_set)
    ops = _native.ops()
    tensor = tf.convert_to_tensor(tensor)
    full = _auto_name("broadcast", name)
    _, allowed = _dtypes()
    _check_dtype(tensor, allowed, full, lambda: ops.perseus_broadcast(tensor, tensor_name=full, root_rank=root_rank))
    return ops.perseus_broadcast(tensor, tensor_name=full, root_rank=root_rank)


def broadcast_(variables: Sequence[Any], root_rank: int, name: Optional[str] = None,
               process_set: Any = global_process_set) -> List[Any]:
    """In place: root_rank's value assigned to each variable on every rank; returns their values."""
    import tensorflow as tf

    _require_global(process_set)
    values = []
    for index, var in enumerate(variables):
        key = "%s.%d.%s" % (name or "inplace", index, var.name.replace(":", "_"))
        assign = var.assign(broadcast(var, root_rank, name=key))
        if tf.executing_eagerly():
            values.append(var.read_value())
        else:
            with tf.control_dependencies([assign]):
                values.append(tf.identity(var.read_value()))
    return values


def _split_error(message: str) -> Exception:
    import tensorflow as tf

    return tf.errors.InvalidArgumentError(None, None, message)


def alltoall(tensor: Any, splits: Any = None, name: Optional[str] = None, ignore_name_scope: bool = False,
             process_set: Any = global_process_set) -> Any:
    """Rows splits[j] of `tensor` go to rank j (equal parts without splits); returns what every rank sent
    here, in rank order, and with splits given also how many rows came from each rank. Built on allgather
    (every rank sees every rank's rows); its gradient is the alltoall of the gradient back."""
    import tensorflow as tf

    _require_global(process_set)
    ops = _native.ops()
    tensor = tf.convert_to_tensor(tensor)
    full = _auto_name("alltoall", name)
    _, allowed = _dtypes()
    _check_dtype(tensor, allowed, full, lambda: ops.perseus_allgather(tensor, tensor_name=full))
    size, rank = _size(), _rank()
    if tensor.shape.rank == 0:
        _refuse(full, _split_error("hvd.alltoall: a scalar has no first dimension to split"))
    rows = tf.shape(tensor, out_type=tf.int32)[0]
    if splits is None:
        if tf.executing_eagerly() and int(rows) % size != 0:
            _refuse(full, _split_error("hvd.alltoall: the first dimension (%d) must be divisible by the number of "
                                       "ranks (%d) when no splits are given" % (int(rows), size)))
        send = tf.fill([size], rows // size)
        if not tf.executing_eagerly():  # a graph: checked when it runs (InvalidArgumentError), before any collective
            with tf.control_dependencies([tf.debugging.assert_equal(
                    rows % size, 0, message="hvd.alltoall: the first dimension must be divisible by the number of "
                                            "ranks when no splits are given")]):
                send = tf.identity(send)
    else:
        send = tf.cast(tf.convert_to_tensor(splits), tf.int32)
        if not tf.executing_eagerly():
            with tf.control_dependencies([
                    tf.debugging.assert_equal(tf.size(send), size, message="hvd.alltoall: splits needs one number per rank"),
                    tf.debugging.assert_non_negative(send, message="hvd.alltoall: splits must be non-negative"),
                    tf.debugging.assert_equal(tf.reduce_sum(send), rows,
                                              message="hvd.alltoall: splits must add up to the first dimension")]):
                send = tf.identity(send)
        else:
            values = send.numpy().reshape(-1).tolist()
            if send.shape.rank != 1 or len(values) != size:
                _refuse(full, _split_error("hvd.alltoall: splits must be a vector of %d numbers (one per rank), "
                                           "not of shape %s" % (size, send.shape)))
            if any(v < 0 for v in values) or sum(values) != int(rows):
                _refuse(full, _split_error("hvd.alltoall: splits %s must be non-negative and add up to the first "
                                           "dimension (%d)" % (values, int(rows))))

    matrix = tf.reshape(ops.perseus_allgather(send, tensor_name=full + ".splits"), [size, size])
    received = matrix[:, rank]
    begin = tf.cumsum(tf.reduce_sum(matrix, axis=1), exclusive=True) + tf.reduce_sum(matrix[:, :rank], axis=1)
    rows_here = tf.ragged.range(begin, begin + received).flat_values

    @tf.custom_gradient
    def exchange(x: Any) -> Any:
        out = tf.gather(ops.perseus_allgather(x, tensor_name=full), rows_here)

        def grad(dy: Any) -> Any:
            return alltoall(dy, splits=received, name=full + ".grad")[0]

        return out, grad

    out = exchange(tensor)
    return (out, received) if splits is not None else out


def _reducescatter_one(tensor: Any, op: str, name: Optional[str], prescale_factor: float,
                       postscale_factor: float) -> Any:
    import tensorflow as tf

    if op not in (Sum, Average):
        raise NotImplementedError("hvd.reducescatter supports hvd.Sum and hvd.Average, not %r" % (op,))
    tensor = tf.convert_to_tensor(tensor)
    size, rank = _size(), _rank()
    if tensor.shape.rank == 0:
        full = _auto_name("allreduce", name)
        _refuse(full, _split_error("hvd.reducescatter: a scalar has no first dimension to scatter"))
    reduced = _allreduce(tensor, op, prescale_factor, postscale_factor, name)
    rows = tf.shape(tensor)[0]
    base, extra = rows // size, rows % size
    # Horovod's split: the first (rows % size) ranks get one row more
    begin = rank * base + tf.minimum(rank, extra)
    count = base + tf.cast(rank < extra, base.dtype)
    return reduced[begin:begin + count]


def reducescatter(tensor: Any, device_dense: str = "", compression: Compressor = Compression.none, op: Any = Average,
                  name: Optional[str] = None, process_set: Any = global_process_set, ignore_name_scope: bool = False,
                  prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> Any:
    """The reduction (Sum or Average) over every rank, of which this rank keeps its part of the first
    dimension (the first `rows % size` ranks one row more). Built on allreduce."""
    _require_global(process_set)
    if op == Adasum:
        raise _adasum_refused()
    compressed, ctx = compression.compress(tensor)
    return compression.decompress(_reducescatter_one(compressed, op, name, prescale_factor, postscale_factor), ctx)


def grouped_reducescatter(tensors: Sequence[Any], device_dense: str = "", compression: Compressor = Compression.none,
                          op: Any = Average, process_set: Any = global_process_set, prescale_factor: float = 1.0,
                          postscale_factor: float = 1.0) -> List[Any]:
    _require_global(process_set)
    return [reducescatter(t, compression=compression, op=op, prescale_factor=prescale_factor,
                          postscale_factor=postscale_factor) for t in tensors]


def join() -> Any:
    raise NotImplementedError("not supported yet: hvd.join in perseus.tensorflow.horovod (ranks that stop early "
                              "are not stood in for); give every rank the same number of steps")


def _int_op(value_fn: Any, name: Optional[str]) -> Any:
    import tensorflow as tf

    return tf.constant(value_fn(), dtype=tf.int32, name=name)


def size_op(process_set_id: int = 0, name: Optional[str] = None) -> Any:
    """hvd.size() as an int32 tensor."""
    _require_global(ProcessSet() if process_set_id != 0 else global_process_set)
    return _int_op(_size, name)


def rank_op(name: Optional[str] = None) -> Any:
    return _int_op(_rank, name)


def local_size_op(name: Optional[str] = None) -> Any:
    from . import basics

    return _int_op(basics.local_size, name)


def local_rank_op(name: Optional[str] = None) -> Any:
    from . import basics

    return _int_op(basics.local_rank, name)


def process_set_included_op(process_set_id: int = 0, name: Optional[str] = None) -> Any:
    _require_global(ProcessSet() if process_set_id != 0 else global_process_set)
    return _int_op(lambda: 1, name)


def _register_gradients() -> None:
    """Horovod's gradients for the collective ops: allreduce's is the allreduce (same op) of the gradient;
    allgather's the rank's rows of the averaged gradient; broadcast's the averaged gradient on the root, 0
    elsewhere."""
    import tensorflow as tf

    # A gradient's collectives are named after the forward collective's name: the tape may call gradient
    # functions of independent ops in a different order on each rank, so a counter would not agree.
    def grad_name(op: Any, suffix: str = "") -> str:
        name = op.get_attr("tensor_name")
        return "grad.%s%s" % (name.decode() if isinstance(name, bytes) else name, suffix)

    def allreduce_grad(op: Any, grad: Any) -> Any:
        return _native.ops().perseus_allreduce(grad, tensor_name=grad_name(op), reduce_op=op.get_attr("reduce_op"))

    def allgather_grad(op: Any, grad: Any) -> Any:
        ops = _native.ops()
        grad = ops.perseus_allreduce(tf.convert_to_tensor(grad), tensor_name=grad_name(op), reduce_op=Average)
        first = tf.reshape(tf.shape(op.inputs[0], out_type=tf.int64)[0], [1])
        dims = tf.reshape(ops.perseus_allgather(first, tensor_name=grad_name(op, ".dims")), [_size()])
        return tf.split(grad, num_or_size_splits=dims, axis=0)[_rank()]

    def broadcast_grad(op: Any, grad: Any) -> Any:
        reduced = _native.ops().perseus_allreduce(tf.convert_to_tensor(grad), tensor_name=grad_name(op),
                                                  reduce_op=Average)
        return reduced if _rank() == op.get_attr("root_rank") else reduced * 0

    for op_type, function in (("PerseusAllreduce", allreduce_grad), ("PerseusAllgather", allgather_grad),
                              ("PerseusBroadcast", broadcast_grad)):
        try:
            tf.RegisterGradient(op_type)(function)
        except KeyError:  # registered already (a module reload)
            pass


def broadcast_variables(variables: Sequence[Any], root_rank: int, process_set: Any = global_process_set,
                        inplace: bool = False) -> Any:
    """Assigns root_rank's value to each variable on every rank (eagerly; a grouped op in a graph)."""
    import tensorflow as tf

    _require_global(process_set)
    assigns = []
    for index, var in enumerate(variables):
        name = "var.%d.%s" % (index, var.name.replace(":", "_"))
        assigns.append(var.assign(broadcast(var, root_rank, name=name)))
    return tf.group(*assigns) if not tf.executing_eagerly() else None


def _to_bytes_tensor(obj: Any) -> Any:
    import numpy as np
    import tensorflow as tf

    return tf.constant(np.frombuffer(pickle.dumps(obj), dtype=np.uint8))


def _evaluate(tensor: Any, session: Any) -> Any:
    import tensorflow as tf

    if tf.executing_eagerly():
        return tensor.numpy()
    if session is None:
        session = tf.compat.v1.get_default_session()
    if session is None:
        raise RuntimeError("hvd: an object collective in graph mode needs a session (pass session=)")
    return session.run(tensor)


def broadcast_object(obj: Any, root_rank: int = 0, session: Any = None, name: Optional[str] = None,
                     process_set: Any = global_process_set) -> Any:
    """A picklable object from root_rank on every rank."""
    import numpy as np
    import tensorflow as tf

    _require_global(process_set)
    base = name or "object"
    payload = _to_bytes_tensor(obj) if _rank() == root_rank else tf.zeros([0], tf.uint8)
    length = broadcast(tf.reshape(tf.size(payload, out_type=tf.int64), [1]), root_rank, name=base + ".length")
    count = int(_evaluate(length, session)[0])
    data = payload if _rank() == root_rank else tf.zeros([count], tf.uint8)
    out = _evaluate(broadcast(data, root_rank, name=base + ".data"), session)
    return pickle.loads(np.asarray(out).tobytes())


def broadcast_object_fn(root_rank: int = 0, session: Any = None, name: Optional[str] = None,
                        process_set: Any = global_process_set) -> Any:
    """A function broadcasting its argument from root_rank (Horovod's graph-mode helper; the same in eager)."""
    _require_global(process_set)

    def _bcast(obj: Any) -> Any:
        return broadcast_object(obj, root_rank=root_rank, session=session, name=name)

    return _bcast


def allgather_object(obj: Any, session: Any = None, name: Optional[str] = None,
                     process_set: Any = global_process_set) -> List[Any]:
    """Every rank's picklable object, in rank order."""
    import numpy as np
    import tensorflow as tf

    _require_global(process_set)
    base = name or "allgather_object"
    payload = _to_bytes_tensor(obj)
    sizes = _evaluate(allgather(tf.reshape(tf.size(payload, out_type=tf.int64), [1]), name=base + ".sizes"), session)
    data = np.asarray(_evaluate(allgather(payload, name=base + ".data"), session))
    out, offset = [], 0
    for count in sizes.tolist():
        out.append(pickle.loads(data[offset:offset + int(count)].tobytes()))
        offset += int(count)
    return out
