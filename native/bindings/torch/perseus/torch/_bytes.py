"""Bytes <-> uint8 tensors with torch alone (no numpy), on every torch perseus supports.

torch.frombuffer (1.10+) and Tensor.numpy() (needs numpy) are not available everywhere, so the bytes are
copied with ctypes between a Python buffer and the tensor's own memory: one memmove each way, the same
code on torch 1.2 and 2.x.
"""

import ctypes

import torch


def to_tensor(payload: bytes) -> torch.Tensor:
    """A new contiguous CPU uint8 tensor holding `payload`."""
    tensor = torch.empty(len(payload), dtype=torch.uint8)
    if payload:
        ctypes.memmove(tensor.data_ptr(), payload, len(payload))
    return tensor


def to_bytes(tensor: torch.Tensor) -> bytes:
    """The bytes of a uint8 tensor (copied to contiguous CPU memory first if it is not there)."""
    if tensor.dtype != torch.uint8:
        raise TypeError("to_bytes() takes a uint8 tensor, got {}".format(tensor.dtype))
    flat = tensor.detach().reshape(-1).cpu().contiguous()
    if flat.numel() == 0:
        return b""
    return ctypes.string_at(flat.data_ptr(), flat.numel())
