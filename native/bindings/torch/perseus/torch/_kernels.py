"""The native ops (torch.ops.perseus.*, loaded and manifest-checked by perseus.torch._native), typed
for the runtime: counts come back as Python ints, `fusion=None` means automatic.

In a development checkout perseus.torch spans the sources and the installed extension (see
perseus/torch/__init__.py); the ops are loaded from whichever of its directories holds the
extension's build manifest.
"""

import os
from typing import Any, List, Optional, Sequence

import torch

import perseus.torch as _package
from perseus.torch import _native

_ops: Optional[Any] = None


def _directory() -> Optional[str]:
    for directory in _package.__path__:
        if os.path.isfile(os.path.join(directory, _native.MANIFEST_FILE)):
            return directory
    return None


def ops() -> Any:
    global _ops
    if _ops is None:
        _ops = _native.load(_directory())
    return _ops


def plan_buckets(sizes_in_bytes: Sequence[int], fusion: Optional[int]) -> List[List[int]]:
    """Fusion plan: lists of tensor indices, in order (fusion None: automatic, 0: one bucket per tensor)."""
    return [list(bucket) for bucket in ops().plan_buckets([int(s) for s in sizes_in_bytes], fusion)]


def compress(src: torch.Tensor, dst: torch.Tensor, scale: float) -> int:
    """dst (fp16/bf16) = src (fp32) * scale; returns how many results are not finite."""
    return int(ops().compress(src, dst, float(scale)))


def decompress(src: torch.Tensor, dst: torch.Tensor, scale: float, world_size: int) -> int:
    """dst (fp32) = src / (scale * world_size); returns how many results are not finite."""
    return int(ops().decompress(src, dst, float(scale), int(world_size)))


def pack(tensors: Sequence[torch.Tensor], flat: torch.Tensor) -> None:
    ops().pack(list(tensors), flat)


def unpack(flat: torch.Tensor, tensors: Sequence[torch.Tensor]) -> None:
    ops().unpack(flat, list(tensors))


def downsample_count(numel: int, n: int, step: int) -> int:
    return int(ops().downsample_count(int(numel), int(n), int(step)))


def downsample_gather_momentum(src: torch.Tensor, residual: torch.Tensor, dst: torch.Tensor, n: int, step: int,
                               momentum: float) -> None:
    ops().downsample_gather_momentum(src, residual, dst, int(n), int(step), float(momentum))


def downsample_scatter(src: torch.Tensor, dst: torch.Tensor, n: int, step: int, zero_unsent: bool) -> None:
    ops().downsample_scatter(src, dst, int(n), int(step), bool(zero_unsent))
