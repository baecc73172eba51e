"""Loader of the compiled perseus_mxnet library (_perseus_mxnet.so, ctypes) with the build-manifest check.

The wheel carries build_manifest.json next to the library: the exact mxnet version it was compiled
against, mxnet's CUDA, the Python tag, the compiler and the release. load() compares it with the running
mxnet BEFORE the library is loaded and raises BuildMismatchError saying what differs and which wheel to
install instead; after loading it checks that the library's embedded manifest is the file's.

The library also carries the communication engine (perseus_engine_*, linked statically), which
perseus.mxnet hands to perseus.engine (engine="static" in the manifest).

Python 3.6 compatible.
"""
import ctypes
import json
import os
import sys
import threading
from typing import Any, Dict, List, Optional

from perseus.horovod_kit.manifest import (INSTALLER, MANIFEST_FILE, BrokenInstallError,  # noqa: F401
                                          BuildMismatchError, Wheel, cuda_words, wheel_version)

LIBRARY_FILE = "_perseus_mxnet.so"
WHEEL = Wheel("perseus_mxnet", "mxnet", "mxnet_version",
              ("release", "version", "mxnet_version", "mxnet_cuda", "python_tag", "compiler"))

_lock = threading.Lock()
_library = None  # type: Optional[ctypes.CDLL]
_loaded_from = None  # type: Optional[str]


def package_dir():
    # type: () -> str
    """The folder holding the manifest and the library: this module's, or another folder of the
    perseus.mxnet package (a checkout's sources in front of an installed wheel)."""
    here = os.path.dirname(os.path.abspath(__file__))
    package = sys.modules.get(__name__.rpartition(".")[0])
    for directory in [here] + list(getattr(package, "__path__", [])):
        if os.path.isfile(os.path.join(directory, MANIFEST_FILE)):
            return os.path.abspath(directory)
    return here


def library_path(directory=None):
    # type: (Optional[str]) -> str
    return os.path.join(directory or package_dir(), LIBRARY_FILE)


def read_manifest(directory=None):
    # type: (Optional[str]) -> Dict[str, Any]
    return WHEEL.read_manifest(directory or package_dir())


def _running_cuda(mx):
    # type: (Any) -> Optional[str]
    """The CUDA major.minor of the running mxnet (None: a CPU build), from its distribution's name."""
    if not mx.runtime.Features().is_enabled("CUDA"):
        return None
    try:
        from importlib import metadata  # Python 3.8+
    except ImportError:  # pragma: no cover - Python 3.6/3.7
        import importlib_metadata as metadata  # type: ignore
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith("mxnet-cu"):
            digits = "".join(c for c in name[len("mxnet-cu"):] if c.isdigit())
            return "%s.%s" % (digits[:-1], digits[-1])
    return "unknown"


def running_environment():
    # type: () -> Dict[str, Any]
    """What the manifest is compared with: the imported mxnet and this interpreter."""
    import mxnet as mx

    return {"mxnet_version": mx.__version__, "mxnet_cuda": _running_cuda(mx),
            "python_tag": "cp%d%d" % sys.version_info[:2]}


def _distribution(cuda):
    # type: (Optional[str]) -> str
    return "mxnet-cu%s" % cuda.replace(".", "") if cuda else "mxnet"


def mismatches(manifest, running):
    # type: (Dict[str, Any], Dict[str, Any]) -> List[str]
    """Each difference between the build and the running environment, in words."""
    found = []
    if manifest["mxnet_version"] != running["mxnet_version"]:
        found.append("mxnet %s (built) vs %s (installed)" % (manifest["mxnet_version"], running["mxnet_version"]))
    if (manifest["mxnet_cuda"] or None) != (running["mxnet_cuda"] or None):
        found.append("%s (built, %s) vs %s (installed)" % (
            cuda_words(manifest["mxnet_cuda"]), _distribution(manifest["mxnet_cuda"]),
            cuda_words(running["mxnet_cuda"])))
    if manifest["python_tag"] not in ("py3", running["python_tag"]):
        found.append("Python %s (built) vs %s (running)" % (manifest["python_tag"], running["python_tag"]))
    return found


def mismatch_message(manifest, running, found):
    # type: (Dict[str, Any], Dict[str, Any], List[str]) -> str
    return ("perseus_mxnet %s was built for %s %s (%s) but %s %s (%s) is installed: %s. Install "
            "perseus_mxnet %s built for %s (the wheel of the same release for your mxnet), or run %s, "
            "which picks the matching wheel."
            % (manifest["version"], _distribution(manifest["mxnet_cuda"]), manifest["mxnet_version"],
               cuda_words(manifest["mxnet_cuda"]), _distribution(running["mxnet_cuda"]),
               running["mxnet_version"], cuda_words(running["mxnet_cuda"]), "; ".join(found),
               wheel_version(manifest["release"], running["mxnet_version"]), cuda_words(running["mxnet_cuda"]), INSTALLER))


def check_manifest(manifest, running=None):
    # type: (Dict[str, Any], Optional[Dict[str, Any]]) -> None
    running = running if running is not None else running_environment()
    found = mismatches(manifest, running)
    if found:
        raise BuildMismatchError(mismatch_message(manifest, running, found))


def _declare(lib):
    # type: (ctypes.CDLL) -> None
    c_int, c_u64, c_char_p, c_void_p = ctypes.c_int, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_void_p
    sigs = {
        "perseus_mxnet_build_manifest": (c_char_p, []),
        "perseus_mxnet_header_version": (c_int, []),
        "perseus_mxnet_core_version": (c_char_p, []),
        "perseus_mxnet_dispatch": (c_char_p, []),
        "perseus_mxnet_last_error": (c_char_p, []),
        "perseus_mxnet_set_engine": (None, [c_void_p]),
        "perseus_mxnet_engine": (c_void_p, []),
        "perseus_mxnet_compress": (c_int, [c_void_p, c_void_p, c_int, c_u64, ctypes.c_float, ctypes.POINTER(c_u64)]),
        "perseus_mxnet_decompress": (c_int, [c_void_p, c_int, c_void_p, c_u64, ctypes.c_float, ctypes.c_int64,
                                             ctypes.POINTER(c_u64)]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def load(directory=None):
    # type: (Optional[str]) -> ctypes.CDLL
    """Checks the manifest, loads the library once, returns it (ctypes, signatures declared)."""
    global _library, _loaded_from
    with _lock:
        if _library is not None:
            if directory is not None and os.path.abspath(directory) != _loaded_from:
                raise WHEEL.second_copy(str(_loaded_from), directory)
            return _library
        manifest = read_manifest(directory)
        check_manifest(manifest)
        path = library_path(directory)
        WHEEL.require_library(path)
        lib = ctypes.CDLL(path)
        _declare(lib)
        WHEEL.check_embedded(json.loads(lib.perseus_mxnet_build_manifest().decode()), manifest,
                             directory or package_dir(), path)
        _library, _loaded_from = lib, os.path.dirname(os.path.abspath(path))
        return lib


def build_manifest():
    # type: () -> Dict[str, Any]
    """The manifest compiled into the loaded library."""
    return json.loads(load().perseus_mxnet_build_manifest().decode())
