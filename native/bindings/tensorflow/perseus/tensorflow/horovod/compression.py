"""Horovod's gradient compression for the TensorFlow API: none, or fp16 on the wire (cast before the
allreduce, cast back after). hvd.allreduce with Compression.none is exact; on the gradient paths
(DistributedGradientTape, the DistributedOptimizers) an fp32 gradient still travels as fp16 when
PERSEUS_ALLREDUCE_DTYPE=0 (the engine's default wire policy), with the gradient scale applied."""
from typing import Any, Tuple


class Compressor:
    @staticmethod
    def compress(tensor: Any) -> Tuple[Any, Any]:
        raise NotImplementedError

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        raise NotImplementedError


class NoneCompressor(Compressor):
    @staticmethod
    def compress(tensor: Any) -> Tuple[Any, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        return tensor


class FP16Compressor(Compressor):
    @staticmethod
    def compress(tensor: Any) -> Tuple[Any, Any]:
        import tensorflow as tf

        if tensor.dtype.is_floating and tensor.dtype != tf.float16:
            return tf.cast(tensor, tf.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        import tensorflow as tf

        return tensor if ctx is None else tf.cast(tensor, ctx)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
