"""Finding and loading libperseus_engine.so, and the C ABI's signatures (perseus/engine.h) for ctypes.

Where the library comes from, first match wins:
  1. PERSEUS_ENGINE_LIBRARY: the path of a libperseus_engine.so (a build tree, a test);
  2. a framework binding that links the engine statically and exports its C ABI, named by
     use_library() before the first engine is made (perseus.mxnet: _perseus_mxnet.so);
  3. the packaged copy beside this module: perseus/engine/lib/libperseus_engine.so (a wheel that ships it).
"""

import ctypes
import os
import sys
from typing import List, Optional

ABI_VERSION = 5  # 3: device buffers (perseus_engine_*_device, _device_report_get, _library_dir_add); 4: shared memory;
# 5: options opaque, set and read by name (options.py)
MAX_DIMS = 8
LIBRARY_ENV = "PERSEUS_ENGINE_LIBRARY"
PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libperseus_engine.so")


class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int) for name in (
        "rank", "size", "local_rank", "local_size", "node", "num_nodes", "streams",
        "hierarchical", "intra_fp16", "inter_fp16")] + [
        ("collectives", ctypes.c_uint64), ("fused_groups", ctypes.c_uint64), ("negotiation_cycles", ctypes.c_uint64),
        ("offline_batches", ctypes.c_uint64), ("offline", ctypes.c_int), ("plan_collectives", ctypes.c_int),
        ("renegotiations", ctypes.c_uint64), ("streams_in_use", ctypes.c_int), ("stream_tuning", ctypes.c_int),
        ("tuned_seconds_per_gib_one", ctypes.c_double), ("tuned_seconds_per_gib_all", ctypes.c_double),
        ("shared_memory_groups", ctypes.c_int), ("node_groups", ctypes.c_int)]


class DeviceReport(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int) for name in (
        "built", "cuda_kernels", "cuda_runtime_version", "device_count", "device_count_status", "nccl_version")] + [
        ("cuda_library", ctypes.c_char * 512), ("nccl_library", ctypes.c_char * 512),
        ("cuda_message", ctypes.c_char * 1024), ("nccl_message", ctypes.c_char * 1024)]


class EngineLibraryError(RuntimeError):
    """The engine library is missing, or of another ABI version."""


_lib = None  # type: Optional[ctypes.CDLL]
_lib_path = None  # type: Optional[str]
_binding_library = None  # type: Optional[str]


def use_library(path: str) -> None:
    """Names a library that exports the engine's C ABI (a binding with the engine linked in, whose ops
    reach the engine only through this handle: perseus.mxnet); it is used unless PERSEUS_ENGINE_LIBRARY
    names another. Fails once an engine library is loaded from elsewhere. A binding whose own ops call
    the engine (perseus.tensorflow) uses load(path) instead, which never lets the variable pick another."""
    global _binding_library
    path = os.path.realpath(path)
    if _lib is not None and _lib_path != path and not os.environ.get(LIBRARY_ENV):
        raise EngineLibraryError("the perseus engine is already loaded from {}; cannot switch to {} in the same "
                                 "process (one engine per process)".format(_lib_path, path))
    _binding_library = path


def library_path() -> str:
    explicit = os.environ.get(LIBRARY_ENV)
    if explicit:
        if not os.path.isfile(explicit):
            raise EngineLibraryError("{}={} does not exist: point it at a built libperseus_engine.so".format(
                LIBRARY_ENV, explicit))
        return explicit
    if _binding_library is not None:
        return _binding_library
    if os.path.isfile(PACKAGED):
        return PACKAGED
    raise EngineLibraryError(
        "the perseus engine library was not found: set {}=/path/to/libperseus_engine.so (build it with "
        "cmake -S native -B native/build -G Ninja -DPERSEUS_WITH_ENGINE=ON && cmake --build native/build, "
        "it is native/build/engine/libperseus_engine.so), or install a package that ships {}".format(
            LIBRARY_ENV, PACKAGED))


def load(path: Optional[str] = None) -> ctypes.CDLL:
    """The loaded engine library with its signatures declared (loaded once per process). `path`: a library
    that carries the engine's C ABI itself (a framework binding that links the engine statically, so that
    its ops and this handle share one engine); it must be the one loaded, if one already is."""
    global _lib, _lib_path
    if _lib is not None:
        if path is not None and os.path.realpath(path) != _lib_path:
            raise EngineLibraryError("the perseus engine is already loaded from {}; cannot use {} as well (one "
                                     "engine per process: use one framework's perseus binding per process, or "
                                     "unset {})".format(_lib_path, path, LIBRARY_ENV))
        return _lib
    path = path or library_path()
    lib = ctypes.CDLL(path)
    lib.perseus_engine_abi_version.restype = ctypes.c_int
    lib.perseus_engine_abi_version.argtypes = []
    version = lib.perseus_engine_abi_version()  # before any other symbol: an older library may lack them
    if version != ABI_VERSION:
        raise EngineLibraryError("{} has C ABI version {}, this module speaks {}: use the library and the "
                                 "perseus-common package of one release".format(path, version, ABI_VERSION))
    _declare(lib)
    add_site_dirs(lib, sys.path)
    _lib, _lib_path = lib, os.path.realpath(path)
    return lib


def add_site_dirs(lib: ctypes.CDLL, entries: List[str]) -> None:
    """Where pip puts NVIDIA's libraries (<site-packages>/nvidia/nccl/lib/libnccl.so.2, nvidia/cuda_runtime/lib):
    the engine searches these folders when a device buffer first needs NCCL or the CUDA runtime."""
    for entry in entries:
        if entry and os.path.isdir(os.path.join(entry, "nvidia")):
            lib.perseus_engine_library_dir_add(os.path.abspath(entry).encode())


def _declare(lib: ctypes.CDLL) -> None:
    c_int, c_char_p, c_void_p = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p
    p_i64, handle_p = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)
    sigs = {
        "perseus_engine_abi_version": (c_int, []),
        "perseus_engine_last_error": (c_char_p, []),
        "perseus_engine_status_string": (c_char_p, [c_int]),
        "perseus_engine_options_new": (c_int, [ctypes.POINTER(c_void_p)]),
        "perseus_engine_options_free": (None, [c_void_p]),
        "perseus_engine_options_set": (c_int, [c_void_p, c_char_p, c_char_p]),
        "perseus_engine_options_get": (c_int, [c_void_p, c_char_p, c_char_p, ctypes.c_size_t]),
        "perseus_engine_option_name": (c_char_p, [c_int, ctypes.POINTER(c_int), ctypes.POINTER(c_char_p)]),
        "perseus_engine_options_from_env": (c_int, [c_void_p]),
        "perseus_engine_options_from_mpi": (c_int, [c_void_p]),
        "perseus_engine_create": (c_int, [c_void_p, ctypes.POINTER(c_void_p)]),
        "perseus_engine_destroy": (c_int, [c_void_p]),
        "perseus_engine_info_get": (c_int, [c_void_p, ctypes.POINTER(Info)]),
        "perseus_engine_allreduce": (c_int, [c_void_p, c_char_p, c_void_p, c_int, c_int, p_i64, c_int, handle_p]),
        "perseus_engine_broadcast": (c_int, [c_void_p, c_char_p, c_void_p, c_int, c_int, p_i64, c_int, handle_p]),
        "perseus_engine_allgather": (c_int, [c_void_p, c_char_p, c_void_p, c_int, c_int, p_i64, handle_p]),
        "perseus_engine_barrier": (c_int, [c_void_p, c_char_p, handle_p]),
        "perseus_engine_poll": (c_int, [c_void_p, ctypes.c_int64]),
        "perseus_engine_wait": (c_int, [c_void_p, ctypes.c_int64]),
        "perseus_engine_allgather_result": (c_int, [c_void_p, ctypes.c_int64, p_i64, c_void_p, ctypes.c_uint64,
                                                    ctypes.POINTER(ctypes.c_uint64)]),
        "perseus_engine_release": (c_int, [c_void_p, ctypes.c_int64]),
        "perseus_engine_store_serve": (c_int, [c_char_p, c_int, ctypes.POINTER(c_void_p)]),
        "perseus_engine_store_port": (c_int, [c_void_p]),
        "perseus_engine_store_stop": (c_int, [c_void_p]),
        "perseus_engine_allreduce_device": (c_int, [c_void_p, c_char_p, c_void_p, c_int, c_int, p_i64, c_int, c_int,
                                                    handle_p]),
        "perseus_engine_broadcast_device": (c_int, [c_void_p, c_char_p, c_void_p, c_int, c_int, p_i64, c_int, c_int,
                                                    handle_p]),
        "perseus_engine_device_report_get": (c_int, [ctypes.POINTER(DeviceReport)]),
        "perseus_engine_library_dir_add": (c_int, [c_char_p]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    # the gradient entries: declared where present (every ABI-2 library built from this checkout has them)
    optional = {
        "perseus_engine_allreduce_downsampled": (c_int, [c_void_p, c_char_p, c_void_p, ctypes.c_int64, c_int,
                                                         ctypes.c_float, c_int, handle_p]),
        "perseus_engine_wire_bytes": (c_int, [c_void_p, c_char_p, c_int, ctypes.POINTER(ctypes.c_uint64),
                                              ctypes.POINTER(ctypes.c_uint64)]),
    }
    for name, (restype, argtypes) in optional.items():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = restype
            fn.argtypes = argtypes
