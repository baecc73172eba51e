"""A framework-free Python handle over the perseus communication engine's C ABI (perseus/engine.h).

    from perseus import engine
    eng = engine.Engine.from_environment()      # numbers from perseus.launch.detect(), policy from PERSEUS_*
    buf = array.array("f", [1.0] * 1024)
    eng.allreduce("grad0", buf, op="average")   # in place; .allreduce_async(...) returns a Handle
    parts = eng.allgather("rows", bytearray(b"..."), dtype="uint8")
    eng.close()

Buffers go through the buffer protocol (bytearray, array.array, memoryview; numpy is not required).
Every rank must submit collectives of the same name, kind, dtype and shape; the order may differ by rank.
The library is found through PERSEUS_ENGINE_LIBRARY or the packaged copy (see _library.py).
"""

import atexit
import ctypes
import os
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _buffers, _device, _library
from ._errors import (COMMUNICATION, INVALID_ARGUMENT, MISMATCH, NONFINITE, OK, PENDING, SHUT_DOWN, UNSUPPORTED,
                      CommunicationError, EngineError, MismatchError, NonFiniteError, ShutDownError,
                      UnsupportedError)
from ._errors import check as _check
from .options import Options
from ._buffers import BFLOAT16, FLOAT16, FLOAT32, FLOAT64, INT32, INT64, UINT8
from ._device import device_report
from ._library import EngineLibraryError

_OPS = {"sum": 0, "average": 1}

__all__ = ["Engine", "Handle", "EngineError", "CommunicationError", "MismatchError", "NonFiniteError",
           "ShutDownError", "UnsupportedError", "EngineLibraryError", "FLOAT32", "FLOAT16", "BFLOAT16",
           "FLOAT64", "INT32", "INT64", "UINT8", "device_report"]


def _shape_array(shape: Sequence[int]) -> Any:
    if len(shape) > _library.MAX_DIMS:
        raise ValueError("at most {} dimensions".format(_library.MAX_DIMS))
    return (ctypes.c_int64 * max(1, len(shape)))(*shape)


_LIVE = weakref.WeakSet()  # type: weakref.WeakSet


@atexit.register
def _close_at_exit() -> None:
    """Engines a script never closed are shut down at exit (every rank does it: a collective shutdown), so
    peers see an orderly end rather than a lost connection; errors at this point are not raised."""
    for eng in list(_LIVE):
        try:
            eng.close()
        except EngineError:
            pass


class Handle:
    """One submitted collective. wait() blocks and raises its error; the buffer is valid after it."""

    def __init__(self, engine: "Engine", handle: int, kind: str, buffer: _buffers.Buffer) -> None:
        self._engine = engine
        self._handle = handle
        self._kind = kind
        self._buffer = buffer
        self._released = False
        # The engine owns the memory until the collective completes, also when this handle is dropped
        # unwaited (an exception while waiting for another handle): the engine holds it until then.
        engine._in_flight[handle] = buffer

    def poll(self) -> bool:
        lib = self._engine._lib
        status = lib.perseus_engine_poll(self._engine._ptr(), self._handle)
        if status == PENDING:
            return False
        self._finish(status)
        return True

    def wait(self) -> Any:
        """None, or for an allgather (bytes of the concatenation, each rank's first dimension)."""
        lib = self._engine._lib
        if not self._released:
            # the wait blocks in C with the GIL released (ctypes does that for every foreign call)
            self._finish(lib.perseus_engine_wait(self._engine._ptr(), self._handle))
        return self._result

    _result = None  # type: Any

    def _finish(self, status: int) -> None:
        if self._released:
            return
        lib, ptr = self._engine._lib, self._engine._ptr()
        try:
            _check(lib, status)
            if self._kind == "allgather":
                size = self._engine.size
                dims = (ctypes.c_int64 * size)()
                total = ctypes.c_uint64()
                _check(lib, lib.perseus_engine_allgather_result(ptr, self._handle, dims, None, 0, ctypes.byref(total)))
                out = bytearray(total.value)
                if total.value:
                    raw = (ctypes.c_char * total.value).from_buffer(out)
                    _check(lib, lib.perseus_engine_allgather_result(ptr, self._handle, None, raw, total.value, None))
                    del raw
                self._result = (out, list(dims))
        finally:
            _check(lib, lib.perseus_engine_release(ptr, self._handle))
            self._released = True
            self._buffer = None
            self._engine._in_flight.pop(self._handle, None)


class Engine:
    """The engine of this process: rendezvous at construction, close() (or the context manager) ends it."""

    def __init__(self, rank: int, size: int, local_rank: int = 0, local_size: int = 1, node_rank: int = 0,
                 master_addr: str = "127.0.0.1", master_port: int = 0, serve_store: Optional[bool] = None,
                 hostname: str = "", **policy: Any) -> None:
        """Numbers from the caller; policy keywords (any engine option by field or variable name: wire_dtype, mode,
        gradient_scale, streams, fusion, nancheck, timeout_seconds, cycle_ms, iface, offline_neg, shm_disable,
        stream_tuning, ...: options.option_names()) override the PERSEUS_* / GLOO_TIMEOUT_SECONDS environment."""
        self._lib = _library.load()
        opts = self._options(policy)
        for name, value in (("rank", rank), ("size", size), ("local_rank", local_rank), ("local_size", local_size),
                            ("node_rank", node_rank), ("master_addr", master_addr), ("master_port", master_port),
                            ("serve_store", -1 if serve_store is None else int(bool(serve_store))),
                            ("hostname", hostname)):
            opts.set(name, value)
        self._create(opts)

    def _options(self, policy: Dict[str, Any]) -> Options:
        opts = Options.from_env(self._lib)
        # the engine refuses an unknown name, listing the known ones; stream_tuning goes last: setting `streams`
        # turns it off, an explicit value wins
        for key in sorted(policy, key=lambda name: name == "stream_tuning"):
            opts.set(key, policy[key])
        return opts

    def _create(self, opts: Options) -> None:
        handle = ctypes.c_void_p()
        _check(self._lib, self._lib.perseus_engine_create(opts.pointer, ctypes.byref(handle)))
        self._handle = handle  # type: Optional[ctypes.c_void_p]
        self._in_flight = {}  # type: Dict[int, Any]  # handle -> buffer the engine may still write
        _LIVE.add(self)
        info = self.info()
        self.rank, self.size = info["rank"], info["size"]

    @classmethod
    def from_mpi(cls, **policy: Any) -> "Engine":
        """Under a plain mpirun: every number, rank 0's address and a free port agreed through MPI (the engine's
        MPI bootstrap plugin; collective over all ranks)."""
        self = cls.__new__(cls)
        self._lib = _library.load()
        opts = self._options(policy)
        opts.from_mpi()
        self._create(opts)
        return self

    @classmethod
    def from_environment(cls, environ: Optional[Dict[str, str]] = None, **policy: Any) -> "Engine":
        """Numbers from perseus.launch.detect(); the store perseusrun serves (PERSEUS_STORE_ADDR), else the one rank 0
        serves at MASTER_ADDR:PERSEUS_MASTER_PORT. Under a plain
        mpirun without MASTER_ADDR: from_mpi()."""
        from perseus import config, launch

        env_map = os.environ if environ is None else environ
        env = launch.detect(env_map)
        if env.size > 1 and not env.master_addr and env.launcher in ("openmpi", "mpich") and environ is None:
            return cls.from_mpi(**policy)  # plain mpirun: MPI itself agrees the master address and port
        served = env_map.get("PERSEUS_STORE_ADDR", "").strip()  # perseusrun serves the store: join it
        if served and env.size > 1:
            host, _, port_text = served.rpartition(":")
            if not host or not port_text.isdigit():
                raise EngineError("PERSEUS_STORE_ADDR={!r} is not HOST:PORT (perseusrun sets it; unset it when "
                                  "launching otherwise)".format(served))
            return cls(env.rank, env.size, env.local_rank, env.local_size, env.node_rank, host, int(port_text),
                       serve_store=False, **policy)
        port = config.load(env_map).master_port
        if env.size > 1 and not env.master_addr:
            raise EngineError("no master address for a {}-rank job ({} launcher): set MASTER_ADDR to rank 0's "
                              "address (and PERSEUS_MASTER_PORT to a free port there)".format(env.size, env.launcher))
        return cls(env.rank, env.size, env.local_rank, env.local_size, env.node_rank,
                   env.master_addr or "127.0.0.1", port, **policy)

    # ---- life cycle ---------------------------------------------------------------------------
    def _ptr(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise ShutDownError("this perseus engine was closed")
        return self._handle

    def close(self) -> None:
        """Shuts the engine down on every rank and frees it; raises the first communication error seen."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        try:
            _check(self._lib, self._lib.perseus_engine_destroy(handle))
        finally:
            self._in_flight.clear()  # the engine's threads have ended: nothing writes into them any more

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def info(self) -> Dict[str, int]:
        info = _library.Info()
        _check(self._lib, self._lib.perseus_engine_info_get(self._ptr(), ctypes.byref(info)))
        return {name: getattr(info, name) for name, _ in _library.Info._fields_}

    # ---- collectives ---------------------------------------------------------------------------
    def allreduce_async(self, name: str, buffer: Any, op: str = "sum", dtype: Any = None,
                        shape: Optional[Sequence[int]] = None) -> Handle:
        if op not in _OPS:
            raise ValueError("op must be 'sum' or 'average', not {!r}".format(op))
        buf = _buffers.describe(buffer, dtype, shape)
        h = ctypes.c_int64()
        _check(self._lib, self._lib.perseus_engine_allreduce(
            self._ptr(), name.encode(), buf.address or None, buf.dtype, len(buf.shape), _shape_array(buf.shape),
            _OPS[op], ctypes.byref(h)))
        return Handle(self, h.value, "allreduce", buf)

    def allreduce(self, name: str, buffer: Any, op: str = "sum", dtype: Any = None,
                  shape: Optional[Sequence[int]] = None) -> None:
        self.allreduce_async(name, buffer, op, dtype, shape).wait()

    def broadcast_async(self, name: str, buffer: Any, root: int = 0, dtype: Any = None,
                        shape: Optional[Sequence[int]] = None) -> Handle:
        buf = _buffers.describe(buffer, dtype, shape)
        h = ctypes.c_int64()
        _check(self._lib, self._lib.perseus_engine_broadcast(
            self._ptr(), name.encode(), buf.address or None, buf.dtype, len(buf.shape), _shape_array(buf.shape),
            root, ctypes.byref(h)))
        return Handle(self, h.value, "broadcast", buf)

    def broadcast(self, name: str, buffer: Any, root: int = 0, dtype: Any = None,
                  shape: Optional[Sequence[int]] = None) -> None:
        self.broadcast_async(name, buffer, root, dtype, shape).wait()

    def allgather_async(self, name: str, buffer: Any, dtype: Any = None,
                        shape: Optional[Sequence[int]] = None) -> Handle:
        buf = _buffers.describe(buffer, dtype, shape, writable=False)
        h = ctypes.c_int64()
        _check(self._lib, self._lib.perseus_engine_allgather(
            self._ptr(), name.encode(), buf.address or None, buf.dtype, len(buf.shape), _shape_array(buf.shape),
            ctypes.byref(h)))
        return Handle(self, h.value, "allgather", buf)

    def allgather(self, name: str, buffer: Any, dtype: Any = None,
                  shape: Optional[Sequence[int]] = None) -> Tuple[bytearray, List[int]]:
        """(the ranks' tensors concatenated along the first dimension as bytes, each rank's first dimension)."""
        return self.allgather_async(name, buffer, dtype, shape).wait()

    def allreduce_downsampled_async(self, name: str, buffer: Any, n: int, momentum: float, op: str = "sum") -> Handle:
        """Gossip downsampling (PERSEUS_DOWNSAMPLE_N_ELEMENTS=n, PERSEUS_GRADIENT_MOMENTUM=momentum) of an fp32
        gradient, in place: this call's 1-in-n elements travel, the others read 0 and wait in the engine's
        residual for `name` (perseus_engine_allreduce_downsampled)."""
        if op not in _OPS:
            raise ValueError("op must be 'sum' or 'average', not {!r}".format(op))
        fn = getattr(self._lib, "perseus_engine_allreduce_downsampled", None)
        if fn is None:
            raise UnsupportedError("this perseus engine library has no gossip downsampling: install the "
                                   "perseus-common and binding packages of one release")
        buf = _buffers.describe(buffer, FLOAT32)
        if buf.dtype != FLOAT32:
            raise ValueError("gossip downsampling takes fp32 gradients")
        h = ctypes.c_int64()
        _check(self._lib, fn(self._ptr(), name.encode(), buf.address or None, buf.nbytes // 4, int(n), float(momentum),
                             _OPS[op], ctypes.byref(h)))
        return Handle(self, h.value, "allreduce", buf)

    def wire_bytes(self, level: str, dtype: Any) -> Tuple[int, int]:
        """(payload bytes, collectives) of `dtype` this rank handed to the transport on `level`: "all" (one
        level), "node" (inside the node), "leaders" (between nodes: the node leaders, or on nodes of equal size
        every rank with its peers) or "control" (negotiation)."""
        fn = getattr(self._lib, "perseus_engine_wire_bytes", None)
        if fn is None:
            raise UnsupportedError("this perseus engine library does not count wire bytes")
        nbytes, calls = ctypes.c_uint64(), ctypes.c_uint64()
        _check(self._lib, fn(self._ptr(), level.encode(), _buffers.dtype_code(dtype), ctypes.byref(nbytes),
                             ctypes.byref(calls)))
        return nbytes.value, calls.value

    def allreduce_device_async(self, name: str, address: int, dtype: Any, shape: Sequence[int], device: int,
                               op: str = "sum", keepalive: Any = None) -> Handle:
        """In place allreduce of CUDA device memory at `address` on `device` (see _device.py). The memory must be
        written before the call (the writing stream synchronised): the engine's stream does not wait for others."""
        h = ctypes.c_int64()
        _check(self._lib, _device.submit_allreduce(self._lib, self._ptr(), name, address, dtype, shape, device, op, h))
        return Handle(self, h.value, "allreduce", _buffers.raw(address, dtype, shape, keepalive))

    def broadcast_device_async(self, name: str, address: int, dtype: Any, shape: Sequence[int], device: int,
                               root: int = 0, keepalive: Any = None) -> Handle:
        h = ctypes.c_int64()
        _check(self._lib, _device.submit_broadcast(self._lib, self._ptr(), name, address, dtype, shape, device, root, h))
        return Handle(self, h.value, "broadcast", _buffers.raw(address, dtype, shape, keepalive))

    def barrier(self, name: str) -> None:
        h = ctypes.c_int64()
        _check(self._lib, self._lib.perseus_engine_barrier(self._ptr(), name.encode(), ctypes.byref(h)))
        Handle(self, h.value, "barrier", _buffers.Buffer(0, 0, (), 0, None)).wait()
