"""Horovod's gradient compression classes (hvd.Compression.none / hvd.Compression.fp16).

For hvd.allreduce the compressor is applied exactly as Horovod does (a cast). In
hvd.DistributedOptimizer, Compression.fp16 selects perseus's scaled fp16 wire format and combines
with PERSEUS_ALLREDUCE_DTYPE as documented in perseus.torch.horovod.optimizer.wire_policy().
"""

from typing import Any, Tuple

import torch


class Compressor(object):
    """Interface: compress a tensor for the wire, decompress the reduced result."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        raise NotImplementedError("a Compressor subclass defines compress()")

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        raise NotImplementedError("a Compressor subclass defines decompress()")


class NoneCompressor(Compressor):
    """No compression: the tensor goes on the wire as it is."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        return tensor


class FP16Compressor(Compressor):
    """Floating-point tensors travel as fp16 and come back in their own dtype."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        if tensor.dtype.is_floating_point:
            return tensor.to(torch.float16), tensor.dtype
        return tensor, tensor.dtype

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        return tensor.to(ctx) if ctx is not None and tensor.dtype != ctx else tensor


class Compression(object):
    """hvd.Compression.none / hvd.Compression.fp16."""

    none = NoneCompressor
    fp16 = FP16Compressor
