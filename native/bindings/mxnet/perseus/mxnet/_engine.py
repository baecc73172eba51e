"""The communication engine of perseus.mxnet: the one linked into _perseus_mxnet.so, driven through the
framework-free handle perseus.engine (PERSEUS_ENGINE_LIBRARY, when set, still wins)."""
from . import _native


def use_binding_engine():
    # type: () -> None
    """Makes perseus.engine load the engine from this wheel's library (after the manifest check)."""
    from perseus.engine import _library

    _native.load()
    _library.use_library(_native.library_path())
