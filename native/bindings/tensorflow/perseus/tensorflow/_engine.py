"""The engine the perseus TensorFlow ops submit to: created by perseus.engine (ctypes) on the op library
itself, which links the engine statically and exports its C ABI, so Python and the ops share one engine;
then handed to the ops (perseus_tf_set_engine) and taken back before it is destroyed."""
import ctypes
import socket
from typing import Any

from perseus.engine import Engine, _library

from . import _native


def _library_handle() -> ctypes.CDLL:
    _native.load()  # the manifest check first: never ctypes-load a library built for another TensorFlow
    lib = _library.load(_native.library_path())
    lib.perseus_tf_set_engine.argtypes = [ctypes.c_void_p]
    lib.perseus_tf_set_engine.restype = None
    return lib


def library() -> ctypes.CDLL:
    """The op library as perseus.engine's library (after the manifest check): perseus.engine's calls, the device
    report included, go to the engine inside it."""
    return _library_handle()


def _hand_over(engine: Engine) -> Engine:
    _library_handle().perseus_tf_set_engine(engine._ptr())
    return engine


def start(**policy: Any) -> Engine:
    """The engine of this job (numbers from the launcher, perseus.launch.detect()), given to the ops."""
    _library_handle()
    return _hand_over(Engine.from_environment(**policy))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_single(**policy: Any) -> Engine:
    """A one-rank engine on a free local port (the self-test), given to the ops."""
    _library_handle()
    return _hand_over(Engine(0, 1, master_addr="127.0.0.1", master_port=_free_port(), **policy))


def stop(engine: Engine) -> None:
    """Takes the engine from the ops, then shuts it down (on every rank) and frees it."""
    _library_handle().perseus_tf_set_engine(None)
    engine.close()
