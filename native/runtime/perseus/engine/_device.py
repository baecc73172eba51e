"""CUDA device buffers through the engine (C ABI 3): what the engine found (device_report) and the submissions
behind Engine.allreduce_device_async / broadcast_device_async. A device buffer is described by its address
(a framework tensor's data_ptr()), dtype and shape; the caller keeps it alive and finished writing it (its
stream synchronised) before the submit. NCCL (pip install nvidia-nccl-cu12) is loaded at run time from
sys.path's nvidia/nccl/lib, PERSEUS_NCCL_LIBRARY or the system; without it, or with one GPU shared by several
ranks, the ranks use Gloo with host staging."""

import ctypes
import sys
from typing import Any, Dict, Sequence, Union

from . import _buffers, _library

_OPS = {"sum": 0, "average": 1}


def device_report() -> Dict[str, Union[int, str]]:
    """What the engine library finds here: built (device backend compiled in), cuda_kernels, the CUDA runtime
    (cuda_library, cuda_runtime_version, device_count, device_count_status, cuda_message) and NCCL
    (nccl_library, nccl_version such as 22105 for 2.21.5, nccl_message: why not, naming the pip package)."""
    lib = _library.load()
    _library.add_site_dirs(lib, sys.path)
    report = _library.DeviceReport()
    status = lib.perseus_engine_device_report_get(ctypes.byref(report))
    if status != 0:
        raise RuntimeError(lib.perseus_engine_last_error().decode(errors="replace"))
    out = {}  # type: Dict[str, Union[int, str]]
    for name, _ in _library.DeviceReport._fields_:
        value = getattr(report, name)
        out[name] = value.decode(errors="replace") if isinstance(value, bytes) else value
    return out


def shape_and_dtype(dtype: Any, shape: Sequence[int]) -> Any:
    code = _buffers.dtype_code(dtype)
    dims = tuple(int(d) for d in shape)
    if len(dims) > _library.MAX_DIMS:
        raise ValueError("at most {} dimensions".format(_library.MAX_DIMS))
    return code, dims, (ctypes.c_int64 * max(len(dims), 1))(*dims)


def submit_allreduce(lib: ctypes.CDLL, engine: Any, name: str, address: int, dtype: Any, shape: Sequence[int],
                     device: int, op: str, handle: ctypes.c_int64) -> int:
    if op not in _OPS:
        raise ValueError("op must be 'sum' or 'average', not {!r}".format(op))
    code, dims, arr = shape_and_dtype(dtype, shape)
    return lib.perseus_engine_allreduce_device(engine, name.encode(), address or None, code, len(dims), arr,
                                               _OPS[op], int(device), ctypes.byref(handle))


def submit_broadcast(lib: ctypes.CDLL, engine: Any, name: str, address: int, dtype: Any, shape: Sequence[int],
                     device: int, root: int, handle: ctypes.c_int64) -> int:
    code, dims, arr = shape_and_dtype(dtype, shape)
    return lib.perseus_engine_broadcast_device(engine, name.encode(), address or None, code, len(dims), arr,
                                               int(root), int(device), ctypes.byref(handle))
