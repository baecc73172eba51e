"""The core's fp16 gradient compression on MXNet NDArrays (host copies; the library works on host memory)."""
import ctypes
from typing import Any, Tuple

import numpy as np

from . import _native

FLOAT16_TYPE_FLAG = 2  # mshadow::kFloat16, the type flag the library checks against mxnet's headers


class CompressionError(RuntimeError):
    pass


def _check(lib, status):
    # type: (Any, int) -> None
    if status != 0:
        raise CompressionError(lib.perseus_mxnet_last_error().decode())


def compress(src, scale=1.0):
    # type: (Any, float) -> Tuple[Any, int]
    """fp32 NDArray -> (fp16 NDArray of src * scale, number of non-finite results)."""
    import mxnet as mx

    lib = _native.load()
    host = np.ascontiguousarray(src.asnumpy(), dtype=np.float32)
    out = np.empty(host.shape, dtype=np.float16)
    nonfinite = ctypes.c_uint64()
    _check(lib, lib.perseus_mxnet_compress(host.ctypes.data, out.ctypes.data, FLOAT16_TYPE_FLAG, host.size,
                                           float(scale), ctypes.byref(nonfinite)))
    return mx.nd.array(out, ctx=src.context, dtype=np.float16), int(nonfinite.value)


def decompress(src, scale=1.0, world_size=1):
    # type: (Any, float, int) -> Tuple[Any, int]
    """fp16 NDArray -> (fp32 NDArray of src / (scale * world_size), number of non-finite results)."""
    import mxnet as mx

    lib = _native.load()
    host = np.ascontiguousarray(src.asnumpy(), dtype=np.float16)
    out = np.empty(host.shape, dtype=np.float32)
    nonfinite = ctypes.c_uint64()
    _check(lib, lib.perseus_mxnet_decompress(host.ctypes.data, FLOAT16_TYPE_FLAG, out.ctypes.data, host.size,
                                             float(scale), int(world_size), ctypes.byref(nonfinite)))
    return mx.nd.array(out, ctx=src.context, dtype=np.float32), int(nonfinite.value)


class Compressor(object):
    """Horovod's compression interface: compress(tensor) -> (tensor, context), decompress(tensor, context)."""

    @staticmethod
    def compress(tensor):
        # type: (Any) -> Tuple[Any, Any]
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        # type: (Any, Any) -> Any
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Tensors as they are."""

    @staticmethod
    def compress(tensor):
        # type: (Any) -> Tuple[Any, Any]
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        # type: (Any, Any) -> Any
        return tensor


class FP16Compressor(Compressor):
    """Floating-point tensors cast to float16 for the wire and back to their dtype; others as they are."""

    @staticmethod
    def compress(tensor):
        # type: (Any) -> Tuple[Any, Any]
        if np.dtype(tensor.dtype).kind == "f" and np.dtype(tensor.dtype) != np.float16:
            return tensor.astype(np.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        # type: (Any, Any) -> Any
        return tensor.astype(ctx) if ctx is not None else tensor


class Compression(object):
    """Horovod's names: Compression.none, Compression.fp16."""
    none = NoneCompressor
    fp16 = FP16Compressor
