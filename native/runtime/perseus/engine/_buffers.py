"""Buffers handed to the engine, through the buffer protocol (bytearray, array.array, memoryview, numpy
arrays, anything exporting a contiguous buffer): their address, dtype, shape and size. numpy is not needed.
"""

import ctypes
from typing import Any, NamedTuple, Optional, Sequence, Tuple

FLOAT32, FLOAT16, BFLOAT16, FLOAT64, INT32, INT64, UINT8 = range(7)
DTYPE_NAMES = {"float32": FLOAT32, "float16": FLOAT16, "bfloat16": BFLOAT16, "float64": FLOAT64,
               "int32": INT32, "int64": INT64, "uint8": UINT8}
ITEMSIZE = {FLOAT32: 4, FLOAT16: 2, BFLOAT16: 2, FLOAT64: 8, INT32: 4, INT64: 8, UINT8: 1}
# struct format characters (memoryview.format) -> dtype; bf16 has none: pass dtype="bfloat16" with 'H'
_FORMATS = {"f": FLOAT32, "e": FLOAT16, "d": FLOAT64, "B": UINT8, "b": UINT8, "c": UINT8}
_INT_FORMATS = "hHiIlLqQ"


class Buffer(NamedTuple):
    address: int
    dtype: int
    shape: Tuple[int, ...]
    nbytes: int
    keepalive: Any  # what keeps the memory alive while the engine uses it


def dtype_code(dtype: Any) -> int:
    if isinstance(dtype, int) and dtype in ITEMSIZE:
        return dtype
    if isinstance(dtype, str) and dtype in DTYPE_NAMES:
        return DTYPE_NAMES[dtype]
    raise ValueError("unknown dtype {!r}: one of {}".format(dtype, ", ".join(sorted(DTYPE_NAMES))))


def _format_dtype(view: memoryview) -> int:
    fmt = view.format.lstrip("@=<")
    if fmt in _FORMATS:
        return _FORMATS[fmt]
    if fmt in _INT_FORMATS:
        if view.itemsize == 4 and fmt in "iIlL":
            return INT32
        if view.itemsize == 8:
            return INT64
    raise ValueError("buffer format {!r} (itemsize {}) has no engine dtype: pass dtype= explicitly (float32, "
                     "float16, bfloat16, float64, int32, int64, uint8)".format(view.format, view.itemsize))


def describe(obj: Any, dtype: Optional[Any] = None, shape: Optional[Sequence[int]] = None,
             writable: bool = True) -> Buffer:
    """The engine's view of `obj`. dtype/shape override what the buffer says (bf16, raw bytes). A Buffer (a
    framework shim's raw memory, e.g. a torch tensor's data_ptr()) is taken as it is."""
    if isinstance(obj, Buffer):
        return obj
    view = memoryview(obj)
    if not view.c_contiguous:
        raise ValueError("the engine needs a C-contiguous buffer: copy it first")
    if writable and view.readonly:
        raise ValueError("the engine writes the result into this buffer, but it is read-only: pass a "
                         "bytearray, array.array or another writable buffer")
    code = dtype_code(dtype) if dtype is not None else _format_dtype(view)
    nbytes = view.nbytes
    size = ITEMSIZE[code]
    if shape is None:
        shape = tuple(view.shape) if view.itemsize == size and view.ndim > 0 else (nbytes // size,)
    shape = tuple(int(d) for d in shape)
    count = 1
    for d in shape:
        count *= d
    if count * size != nbytes:
        raise ValueError("shape {} of dtype {} needs {} bytes, the buffer has {}".format(
            shape, code, count * size, nbytes))
    if nbytes == 0:
        return Buffer(0, code, shape, 0, view)
    if view.readonly:
        keep = (ctypes.c_char * nbytes).from_buffer_copy(view)  # allgather's input only: a copy is enough
    else:
        keep = (ctypes.c_char * nbytes).from_buffer(view.cast("B"))
    return Buffer(ctypes.addressof(keep), code, shape, nbytes, (view, keep))


def raw(address: int, dtype: Any, shape: Sequence[int], keepalive: Any) -> Buffer:
    """Memory a framework owns (a tensor's data pointer), C-contiguous, described by the caller; `keepalive`
    (the tensor) is held until the engine is done with the memory."""
    code = dtype_code(dtype)
    count = 1
    for d in shape:
        count *= int(d)
    return Buffer(int(address), code, tuple(int(d) for d in shape), count * ITEMSIZE[code], keepalive)
