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
alltoall and reducescatter are built on allgather and allreduce.

hvd.allreduce (and grouped_allreduce, reducescatter) is exact, as Horovod's is: float32 travels as float64 (the
sum of float32 values rounded once), never through the engine's fp16 gradient wire policy
(PERSEUS_ALLREDUCE_DTYPE). Only the gradient paths (DistributedGradientTape, the DistributedOptimizers) use that
policy, through gradient_allreduce().

process_set= (a set registered by hvd.add_process_set or hvd.init(process_sets=...)) runs a collective on the
set's own engine (process_sets.py); root_rank stays a global rank, as in Horovod.
"""
import itertools
import pickle
import threading
import warnings
from typing import Any, Dict, List, Optional, Sequence

from .. import _native
from . import _job
from .compression import Compression, Compressor
from .process_sets import Group, ProcessSet, add_process_set, global_process_set, group_by_id, group_of
from .process_sets import included as _set_included
from .process_sets import remove_process_set, set_size as _set_size

Average = "average"
Sum = "sum"
Adasum = "adasum"
Min = "min"
Max = "max"
Product = "product"
_REDUCE_OPS = (Average, Sum, Adasum, Min, Max, Product)

_counters = {}  # type: Dict[str, Any]
_counter_lock = threading.Lock()


def _require_global(process_set: Any) -> None:
    """Kept for callers that only check the argument: a registered set or the global one (ValueError else)."""
    group_of(process_set, "hvd")


def _dtypes() -> Any:
    import tensorflow as tf

    reduce_types = (tf.uint8, tf.int8, tf.int32, tf.int64, tf.float16, tf.bfloat16, tf.float32, tf.float64)
    return reduce_types, reduce_types + (tf.uint16, tf.int16, tf.bool)


def reset_names() -> None:
    """Generated names start from 0 again (hvd.init() of a new engine)."""
    with _counter_lock:
        _counters.clear()


def _auto_name(kind: str, name: Optional[str], group: Optional[Group] = None) -> str:
    """The collective's name: the caller's, else the next of a counter per kind and process set (members of a set
    number its collectives alike, whatever other sets each of them uses)."""
    key = kind + (group.key() if group is not None else "")
    if name:
        return "%s.%s" % (key, name)
    with _counter_lock:
        counter = _counters.setdefault(key, itertools.count())
        return "%s.auto.%d" % (key, next(counter))


def _meet_refusal(full_name: str, group: Optional[Group] = None) -> None:
    """This rank refuses the collective `full_name` by itself: a barrier under that name (on the set's engine)
    makes the other ranks' collective of the name fail at once (a mismatch) instead of waiting out
    GLOO_TIMEOUT_SECONDS."""
    engine = group.engine if group is not None else _job.state.engine
    if engine is None:
        return
    try:
        engine.barrier(full_name)
    except Exception:  # the others submitted the collective: a mismatch, expected; the caller raises its error
        pass


def _refuse(full_name: str, error: BaseException, group: Optional[Group] = None) -> None:
    _meet_refusal(full_name, group)
    raise error


def _check_dtype(tensor: Any, allowed: Sequence[Any], full_name: str, call: Any,
                 group: Optional[Group] = None) -> None:
    """A dtype outside Horovod's set: negotiated, then TensorFlow's own op-definition error (`call` runs the op)."""
    if tensor.dtype.base_dtype not in allowed:
        _meet_refusal(full_name, group)
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
    """Horovod's pre/postscale: integers through float64, truncated back; float16/bfloat16 in float32 math, rounded
    back once; float32/float64 in their own dtype."""
    import tensorflow as tf

    if factor == 1.0:
        return tensor
    if tensor.dtype in (tf.float16, tf.bfloat16):
        return tf.cast(tf.cast(tensor, tf.float32) * tf.cast(factor, tf.float32), tensor.dtype)
    if tensor.dtype.is_floating:
        return tensor * tf.cast(factor, tensor.dtype)
    return tf.cast(tf.cast(tensor, tf.float64) * factor, tensor.dtype)


def _size() -> int:
    return _job.size()


def _rank() -> int:
    return _job.rank()


def _exact_wire(tensor: Any) -> Any:
    """The dtype an exact allreduce sends: float32 as float64 (the engine's wire policy only ever touches float32;
    a float64 sum of float32 values rounded once to float32 is the correctly rounded sum)."""
    import tensorflow as tf

    return tf.float64 if tensor.dtype == tf.float32 else None


def _allreduce(tensor: Any, op: str, prescale_factor: float, postscale_factor: float, name: Optional[str],
               group: Group, exact: bool = True) -> Any:
    """op over the group's ranks. exact=False (the gradient paths only): float32 goes through the engine's wire
    policy (fp16 on the wire with PERSEUS_ALLREDUCE_DTYPE=0); exact=True: float32 travels as float64."""
    import tensorflow as tf

    ops = _native.ops()
    full = _auto_name("allreduce", name, group)
    allowed, _ = _dtypes()
    _check_dtype(tensor, allowed, full, lambda: ops.perseus_allreduce(tensor, tensor_name=full, reduce_op="sum"),
                 group)
    tensor = _scale(tensor, prescale_factor)
    if op in (Min, Max, Product):
        gathered = ops.perseus_allgather(tf.expand_dims(tensor, 0), tensor_name=full, process_set_id=group.id)
        reduce = {Min: tf.reduce_min, Max: tf.reduce_max, Product: tf.reduce_prod}[op]
        if tensor.dtype in (tf.uint8, tf.int8) and op == Product:  # no int8 kernel of reduce_prod: exact via int32
            out = tf.cast(reduce(tf.cast(gathered, tf.int32), axis=0), tensor.dtype)
        else:
            out = reduce(gathered, axis=0)
    elif op == Average and not tensor.dtype.is_floating:
        out = _scale(ops.perseus_allreduce(tensor, tensor_name=full, reduce_op=Sum, process_set_id=group.id),
                     1.0 / group.size)
    else:
        wide = _exact_wire(tensor) if exact else None
        if wide is not None:
            out = tf.cast(ops.perseus_allreduce(tf.cast(tensor, wide), tensor_name=full, reduce_op=op,
                                                process_set_id=group.id), tensor.dtype)
        else:
            out = ops.perseus_allreduce(tensor, tensor_name=full, reduce_op=op, process_set_id=group.id)
    return _scale(out, postscale_factor)


def _sparse_allreduce(tensor: Any, op: str, prescale_factor: float, postscale_factor: float, name: Optional[str],
                      process_set: Any, group: Group) -> Any:
    """A tf.IndexedSlices: its values and indices allgathered (values divided by the size for an average), as
    Horovod does."""
    import tensorflow as tf

    if op == Adasum:
        raise NotImplementedError("not supported: hvd.Adasum of a tf.IndexedSlices (nor Adasum at all in "
                                  "perseus); pass sparse_as_dense=True and use hvd.Average")
    if op not in (Sum, Average):
        raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
    values = allgather(tensor.values, name=None if name is None else name + ".values", process_set=process_set)
    indices = allgather(tensor.indices, name=None if name is None else name + ".indices", process_set=process_set)
    if op == Average:
        values = values / tf.cast(group.size, values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)


def _allreduce_api(tensor: Any, op: Any, compression: Compressor, prescale_factor: float, postscale_factor: float,
                   name: Optional[str], process_set: Any, exact: bool) -> Any:
    import tensorflow as tf

    group = group_of(process_set, "hvd.allreduce")
    if isinstance(tensor, tf.IndexedSlices):
        return _sparse_allreduce(tensor, op, prescale_factor, postscale_factor, name, process_set, group)
    if op == Adasum:
        _refuse(_auto_name("allreduce", name, group), _adasum_refused(), group)
    tensor = tf.convert_to_tensor(tensor)
    compressed, ctx = compression.compress(tensor)
    reduced = _allreduce(compressed, op, prescale_factor, postscale_factor, name, group, exact=exact)
    return compression.decompress(reduced, ctx)


def allreduce(tensor: Any, average: Optional[bool] = None, device_dense: str = "", device_sparse: str = "",
              compression: Compressor = Compression.none, op: Any = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, name: Optional[str] = None, process_set: Any = global_process_set,
              ignore_name_scope: bool = False) -> Any:
    """The reduction (op: Average by default, Sum, Min, Max, Product) of `tensor` over the ranks of `process_set`
    (every rank by default), exact as Horovod's: float32 is never put on the engine's fp16 gradient wire. A
    tf.IndexedSlices is allgathered (values and indices, values divided by the size for an average), as Horovod
    does."""
    try:
        op = _op_word(op, average)
    except ValueError as error:  # a refusal of this rank alone: the others fail at once too
        _refuse(_auto_name("allreduce", name), error)
    return _allreduce_api(tensor, op, compression, prescale_factor, postscale_factor, name, process_set, exact=True)


def gradient_allreduce(tensor: Any, compression: Compressor, op: Any, name: str,
                       process_set: Any = global_process_set, prescale_factor: float = 1.0,
                       postscale_factor: float = 1.0) -> Any:
    """The gradient paths' allreduce (DistributedGradientTape, the DistributedOptimizers): as allreduce, except
    that float32 travels under the engine's wire policy (fp16 with the gradient scale when
    PERSEUS_ALLREDUCE_DTYPE=0, the default; fp32 with =1)."""
    return _allreduce_api(tensor, _op_word(op, None), compression, prescale_factor, postscale_factor, name,
                          process_set, exact=False)


def grouped_allreduce(tensors: Sequence[Any], average: Optional[bool] = None, device_dense: str = "",
                      device_sparse: str = "", compression: Compressor = Compression.none, op: Any = None,
                      prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                      process_set: Any = global_process_set, ignore_name_scope: bool = False,
                      name: Optional[str] = None) -> List[Any]:
    """allreduce of each tensor (the engine fuses those submitted in one negotiation cycle); exact as allreduce."""
    import tensorflow as tf

    if not tensors:
        return tensors
    op = _op_word(op, average)
    group_of(process_set, "hvd.grouped_allreduce")
    if any(isinstance(t, tf.IndexedSlices) for t in tensors):
        if op == Adasum:
            raise NotImplementedError("not supported: hvd.Adasum of a tf.IndexedSlices; pass sparse_as_dense=True")
        if op not in (Sum, Average):
            raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
        if prescale_factor != 1.0 or postscale_factor != 1.0:
            raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
    return [allreduce(t, compression=compression, op=op, prescale_factor=prescale_factor,
                      postscale_factor=postscale_factor, name=None if name is None else "%s.%d" % (name, i),
                      process_set=process_set)
            for i, t in enumerate(tensors)]


def allgather(tensor: Any, name: Optional[str] = None, ignore_name_scope: bool = False,
              process_set: Any = global_process_set) -> Any:
    """Every rank's tensor (of the set's ranks) concatenated along the first dimension (which may differ by rank)."""
    import tensorflow as tf

    group = group_of(process_set, "hvd.allgather")
    ops = _native.ops()
    tensor = tf.convert_to_tensor(tensor)
    full = _auto_name("allgather", name, group)
    _, allowed = _dtypes()
    _check_dtype(tensor, allowed, full, lambda: ops.perseus_allgather(tensor, tensor_name=full), group)
    return ops.perseus_allgather(tensor, tensor_name=full, process_set_id=group.id)


def grouped_allgather(tensors: Sequence[Any], name: Optional[str] = None, ignore_name_scope: bool = False,
                      process_set: Any = global_process_set) -> List[Any]:
    group_of(process_set, "hvd.grouped_allgather")
    return [allgather(t, name=None if name is None else "%s.%d" % (name, i), process_set=process_set)
            for i, t in enumerate(tensors)]


def broadcast(tensor: Any, root_rank: int, name: Optional[str] = None, ignore_name_scope: bool = False,
              process_set: Any = global_process_set) -> Any:
    """root_rank's tensor on every rank of the set (root_rank: a global rank, a member of the set)."""
    import tensorflow as tf

    group = group_of(process_set, "hvd.broadcast")
    ops = _native.ops()
    tensor = tf.convert_to_tensor(tensor)
    full = _auto_name("broadcast", name, group)
    try:
        root = group.root(root_rank, "hvd.broadcast")
    except ValueError as error:
        _refuse(full, error, group)
    _, allowed = _dtypes()
    _check_dtype(tensor, allowed, full, lambda: ops.perseus_broadcast(tensor, tensor_name=full, root_rank=root),
                 group)
    return ops.perseus_broadcast(tensor, tensor_name=full, root_rank=root, process_set_id=group.id)


def broadcast_(variables: Sequence[Any], root_rank: int, name: Optional[str] = None,
               process_set: Any = global_process_set) -> List[Any]:
    """In place: root_rank's value assigned to each variable on every rank of the set; returns their values."""
    import tensorflow as tf

    group_of(process_set, "hvd.broadcast_")
    values = []
    for index, var in enumerate(variables):
        key = "%s.%d.%s" % (name or "inplace", index, var.name.replace(":", "_"))
        assign = var.assign(broadcast(var, root_rank, name=key, process_set=process_set))
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
    """Rows splits[j] of `tensor` go to the set's j-th rank (equal parts without splits); returns what every rank
    sent here, in rank order, and with splits given also how many rows came from each rank. Built on allgather
    (every rank sees every rank's rows); its gradient is the alltoall of the gradient back."""
    import tensorflow as tf

    group = group_of(process_set, "hvd.alltoall")
    ops = _native.ops()
    tensor = tf.convert_to_tensor(tensor)
    full = _auto_name("alltoall", name, group)
    _, allowed = _dtypes()
    _check_dtype(tensor, allowed, full, lambda: ops.perseus_allgather(tensor, tensor_name=full), group)
    size, rank = group.size, group.rank
    if tensor.shape.rank == 0:
        _refuse(full, _split_error("hvd.alltoall: a scalar has no first dimension to split"), group)
    rows = tf.shape(tensor, out_type=tf.int32)[0]
    if splits is None:
        if tf.executing_eagerly() and int(rows) % size != 0:
            _refuse(full, _split_error("hvd.alltoall: the first dimension (%d) must be divisible by the number of "
                                       "ranks (%d) when no splits are given" % (int(rows), size)), group)
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
                                           "not of shape %s" % (size, send.shape)), group)
            if any(v < 0 for v in values) or sum(values) != int(rows):
                _refuse(full, _split_error("hvd.alltoall: splits %s must be non-negative and add up to the first "
                                           "dimension (%d)" % (values, int(rows))), group)

    matrix = tf.reshape(ops.perseus_allgather(send, tensor_name=full + ".splits", process_set_id=group.id),
                        [size, size])
    received = matrix[:, rank]
    begin = tf.cumsum(tf.reduce_sum(matrix, axis=1), exclusive=True) + tf.reduce_sum(matrix[:, :rank], axis=1)
    rows_here = tf.ragged.range(begin, begin + received).flat_values

    @tf.custom_gradient
    def exchange(x: Any) -> Any:
        out = tf.gather(ops.perseus_allgather(x, tensor_name=full, process_set_id=group.id), rows_here)

        def grad(dy: Any) -> Any:
            return alltoall(dy, splits=received, name=full + ".grad", process_set=process_set)[0]

        return out, grad

    out = exchange(tensor)
    return (out, received) if splits is not None else out


def _reducescatter_one(tensor: Any, op: str, name: Optional[str], prescale_factor: float,
                       postscale_factor: float, group: Group) -> Any:
    import tensorflow as tf

    if op not in (Sum, Average):
        raise NotImplementedError("hvd.reducescatter supports hvd.Sum and hvd.Average, not %r" % (op,))
    tensor = tf.convert_to_tensor(tensor)
    size, rank = group.size, group.rank
    scatter_name = _auto_name("reducescatter", name, group)
    if tensor.shape.rank == 0:
        _refuse(_auto_name("allreduce", scatter_name, group),
                _split_error("hvd.reducescatter: a scalar has no first dimension to scatter"), group)

    @tf.custom_gradient
    def scatter(x: Any) -> Any:
        reduced = _allreduce(x, op, prescale_factor, postscale_factor, scatter_name, group)
        rows = tf.shape(x)[0]
        base, extra = rows // size, rows % size
        # Horovod's split: the first (rows % size) ranks get one row more
        begin = rank * base + tf.minimum(rank, extra)
        count = base + tf.cast(rank < extra, base.dtype)

        def grad(dy: Any) -> Any:
            # Horovod's gradient: every rank's output gradient gathered, times the set's size for Sum and the
            # scale factors (Average: not divided)
            factor = (size if op == Sum else 1) * prescale_factor * postscale_factor
            dy = tf.convert_to_tensor(dy)
            return _native.ops().perseus_allgather(dy * tf.cast(factor, dy.dtype) if factor != 1 else dy,
                                                   tensor_name="grad.%s" % scatter_name, process_set_id=group.id)

        return reduced[begin:begin + count], grad

    return scatter(tensor)


def reducescatter(tensor: Any, device_dense: str = "", compression: Compressor = Compression.none, op: Any = Average,
                  name: Optional[str] = None, process_set: Any = global_process_set, ignore_name_scope: bool = False,
                  prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> Any:
    """The reduction (Sum or Average) over the set's ranks, of which this rank keeps its part of the first
    dimension (the first `rows % size` ranks one row more). Built on allreduce, exact as it."""
    group = group_of(process_set, "hvd.reducescatter")
    if op == Adasum:
        raise _adasum_refused()
    compressed, ctx = compression.compress(tensor)
    return compression.decompress(_reducescatter_one(compressed, op, name, prescale_factor, postscale_factor, group),
                                  ctx)


def grouped_reducescatter(tensors: Sequence[Any], device_dense: str = "", compression: Compressor = Compression.none,
                          op: Any = Average, process_set: Any = global_process_set, prescale_factor: float = 1.0,
                          postscale_factor: float = 1.0) -> List[Any]:
    group_of(process_set, "hvd.grouped_reducescatter")
    return [reducescatter(t, compression=compression, op=op, prescale_factor=prescale_factor,
                          postscale_factor=postscale_factor, process_set=process_set) for t in tensors]


def join() -> Any:
    raise NotImplementedError("not supported yet: hvd.join in perseus.tensorflow.horovod (ranks that stop early "
                              "are not stood in for); give every rank the same number of steps")


def _int_op(value_fn: Any, name: Optional[str]) -> Any:
    import tensorflow as tf

    return tf.constant(value_fn(), dtype=tf.int32, name=name)


def size_op(process_set_id: int = 0, name: Optional[str] = None) -> Any:
    """The size of the process set `process_set_id` (0: hvd.size()) as an int32 tensor."""
    return _int_op(lambda: _set_size(process_set_id), name)


def rank_op(name: Optional[str] = None) -> Any:
    return _int_op(_rank, name)


def local_size_op(name: Optional[str] = None) -> Any:
    return _int_op(_job.local_size, name)


def local_rank_op(name: Optional[str] = None) -> Any:
    return _int_op(_job.local_rank, name)


def process_set_included_op(process_set_id: int = 0, name: Optional[str] = None) -> Any:
    """1 when this rank is a member of the process set `process_set_id`, else 0 (an int32 tensor)."""
    return _int_op(lambda: int(_set_included(process_set_id)), name)


def _register_gradients() -> None:
    """Horovod's gradients for the collective ops: allreduce's is the allreduce (same op) of the gradient;
    allgather's the rank's rows of the averaged gradient; broadcast's the averaged gradient on the root, 0
    elsewhere. Each runs on the forward op's process set."""
    import tensorflow as tf

    # A gradient's collectives are named after the forward collective's name: the tape may call gradient
    # functions of independent ops in a different order on each rank, so a counter would not agree.
    def grad_name(op: Any, suffix: str = "") -> str:
        name = op.get_attr("tensor_name")
        return "grad.%s%s" % (name.decode() if isinstance(name, bytes) else name, suffix)

    def set_id(op: Any) -> int:
        return int(op.get_attr("process_set_id"))

    def allreduce_grad(op: Any, grad: Any) -> Any:
        return _native.ops().perseus_allreduce(grad, tensor_name=grad_name(op), reduce_op=op.get_attr("reduce_op"),
                                               process_set_id=set_id(op))

    def allgather_grad(op: Any, grad: Any) -> Any:
        ops = _native.ops()
        group = group_by_id(set_id(op))
        grad = ops.perseus_allreduce(tf.convert_to_tensor(grad), tensor_name=grad_name(op), reduce_op=Average,
                                     process_set_id=group.id)
        first = tf.reshape(tf.shape(op.inputs[0], out_type=tf.int64)[0], [1])
        dims = tf.reshape(ops.perseus_allgather(first, tensor_name=grad_name(op, ".dims"), process_set_id=group.id),
                          [group.size])
        return tf.split(grad, num_or_size_splits=dims, axis=0)[group.rank]

    def broadcast_grad(op: Any, grad: Any) -> Any:
        group = group_by_id(set_id(op))
        reduced = _native.ops().perseus_allreduce(tf.convert_to_tensor(grad), tensor_name=grad_name(op),
                                                  reduce_op=Average, process_set_id=group.id)
        return reduced if group.rank == op.get_attr("root_rank") else reduced * 0

    for op_type, function in (("PerseusAllreduce", allreduce_grad), ("PerseusAllgather", allgather_grad),
                              ("PerseusBroadcast", broadcast_grad)):
        try:
            tf.RegisterGradient(op_type)(function)
        except KeyError:  # registered already (a module reload)
            pass


def broadcast_variables(variables: Sequence[Any], root_rank: int, process_set: Any = global_process_set,
                        inplace: bool = False) -> Any:
    """Assigns root_rank's value to each variable on every rank of the set (eagerly; a grouped op in a graph)."""
    import tensorflow as tf

    group_of(process_set, "hvd.broadcast_variables")
    assigns = []
    for index, var in enumerate(variables):
        name = "var.%d.%s" % (index, var.name.replace(":", "_"))
        assigns.append(var.assign(broadcast(var, root_rank, name=name, process_set=process_set)))
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

    group_of(process_set, "hvd.broadcast_object")
    base = name or "object"
    payload = _to_bytes_tensor(obj) if _rank() == root_rank else tf.zeros([0], tf.uint8)
    length = broadcast(tf.reshape(tf.size(payload, out_type=tf.int64), [1]), root_rank, name=base + ".length",
                       process_set=process_set)
    count = int(_evaluate(length, session)[0])
    data = payload if _rank() == root_rank else tf.zeros([count], tf.uint8)
    out = _evaluate(broadcast(data, root_rank, name=base + ".data", process_set=process_set), session)
    return pickle.loads(np.asarray(out).tobytes())


def broadcast_object_fn(root_rank: int = 0, session: Any = None, name: Optional[str] = None,
                        process_set: Any = global_process_set) -> Any:
    """A function broadcasting its argument from root_rank (Horovod's graph-mode helper; the same in eager)."""
    group_of(process_set, "hvd.broadcast_object_fn")

    def _bcast(obj: Any) -> Any:
        return broadcast_object(obj, root_rank=root_rank, session=session, name=name, process_set=process_set)

    return _bcast


def allgather_object(obj: Any, session: Any = None, name: Optional[str] = None,
                     process_set: Any = global_process_set) -> List[Any]:
    """Every rank's picklable object, in rank order."""
    import numpy as np
    import tensorflow as tf

    group_of(process_set, "hvd.allgather_object")
    base = name or "allgather_object"
    payload = _to_bytes_tensor(obj)
    sizes = _evaluate(allgather(tf.reshape(tf.size(payload, out_type=tf.int64), [1]), name=base + ".sizes",
                                process_set=process_set), session)
    data = np.asarray(_evaluate(allgather(payload, name=base + ".data", process_set=process_set), session))
    out, offset = [], 0
    for count in sizes.tolist():
        out.append(pickle.loads(data[offset:offset + int(count)].tobytes()))
        offset += int(count)
    return out
