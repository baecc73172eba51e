"""Loader of the perseus op library (tf.load_op_library) with the build-manifest check.

The wheel carries build_manifest.json next to the op library: the exact TensorFlow version it was
compiled against, TensorFlow's CUDA, the C++ ABI (tf.sysconfig.CXX11_ABI_FLAG), the C++ standard, the
compiler and the release. load() compares it with the running TensorFlow BEFORE the library is loaded
(a mismatched op library can crash on undefined symbols) and raises BuildMismatchError saying what
differs and which wheel to install instead. After loading it also checks that the library's own
embedded manifest is the file's (a swapped file is caught).

The manifest's reading and the install checks are the kit's (perseus.horovod_kit.manifest.Wheel); what is
TensorFlow's is the running build's facts and how they compare. Python 3.6 compatible (TensorFlow 1.15 cells run
on it).
"""
import ctypes
import json
import os
import threading
from typing import Any, Dict, List, Optional

from perseus.horovod_kit.manifest import (INSTALLER, MANIFEST_FILE, BrokenInstallError,  # noqa: F401
                                          BuildMismatchError, Wheel, abi_words, cuda_words, wheel_version)

LIBRARY_FILE = "_perseus_tf_ops.so"
WHEEL = Wheel("perseus_tensorflow", "TensorFlow", "tensorflow_version",
              ("release", "version", "tensorflow_version", "tensorflow_cuda", "cxx11_abi", "cxx_standard", "compiler"))

_lock = threading.Lock()
_loaded = None  # type: Optional[Any]
_loaded_from = None  # type: Optional[str]


def package_dir():
    # type: () -> str
    return os.path.dirname(os.path.abspath(__file__))


def library_path(directory=None):
    # type: (Optional[str]) -> str
    return os.path.join(directory or package_dir(), LIBRARY_FILE)


def read_manifest(directory=None):
    # type: (Optional[str]) -> Dict[str, Any]
    return WHEEL.read_manifest(directory or package_dir())


def running_environment():
    # type: () -> Dict[str, Any]
    """What the manifest is compared with: the imported TensorFlow."""
    import tensorflow as tf

    info = tf.sysconfig.get_build_info() if hasattr(tf.sysconfig, "get_build_info") else {}
    cuda = info.get("cuda_version") if info.get("is_cuda_build") else None
    return {
        "tensorflow_version": tf.__version__,
        "tensorflow_cuda": ".".join(str(cuda).split(".")[:2]) if cuda else None,
        "cxx11_abi": bool(tf.sysconfig.CXX11_ABI_FLAG),
    }


def mismatches(manifest, running):
    # type: (Dict[str, Any], Dict[str, Any]) -> List[str]
    """Each difference between the build and the running TensorFlow, in words."""
    found = []
    if manifest["tensorflow_version"] != running["tensorflow_version"]:
        found.append("TensorFlow %s (built) vs %s (installed)"
                     % (manifest["tensorflow_version"], running["tensorflow_version"]))
    if (manifest["tensorflow_cuda"] or None) != (running["tensorflow_cuda"] or None):
        found.append("%s (built) vs %s (installed)" % (cuda_words(manifest["tensorflow_cuda"]),
                                                       cuda_words(running["tensorflow_cuda"])))
    if bool(manifest["cxx11_abi"]) != bool(running["cxx11_abi"]):
        found.append("%s (built) vs %s (installed TensorFlow)" % (abi_words(manifest["cxx11_abi"]),
                                                                  abi_words(running["cxx11_abi"])))
    return found


def mismatch_message(manifest, running, found):
    # type: (Dict[str, Any], Dict[str, Any], List[str]) -> str
    public = running["tensorflow_version"].split("+")[0]
    compiler = manifest.get("compiler") or {}
    return (
        "perseus_tensorflow %s was built for TensorFlow %s (%s, %s, C++%s, %s %s) but TensorFlow %s (%s, %s) "
        "is installed: %s. Install perseus_tensorflow %s (the wheel of the same release built for "
        "TensorFlow %s, %s), or run %s, which picks the matching wheel."
        % (manifest["version"], manifest["tensorflow_version"], cuda_words(manifest["tensorflow_cuda"]),
           abi_words(manifest["cxx11_abi"]), manifest["cxx_standard"], compiler.get("id", "?"),
           compiler.get("version", "?"), running["tensorflow_version"], cuda_words(running["tensorflow_cuda"]),
           abi_words(running["cxx11_abi"]), "; ".join(found), wheel_version(manifest["release"], public), public,
           cuda_words(running["tensorflow_cuda"]), INSTALLER))


def check_manifest(manifest, running=None):
    # type: (Dict[str, Any], Optional[Dict[str, Any]]) -> None
    running = running if running is not None else running_environment()
    found = mismatches(manifest, running)
    if found:
        raise BuildMismatchError(mismatch_message(manifest, running, found))


def load(directory=None):
    # type: (Optional[str]) -> Any
    """Checks the manifest, loads the op library once, returns its module of op functions
    (perseus_build_info, perseus_compress, perseus_allreduce, ...)."""
    global _loaded, _loaded_from
    directory = os.path.abspath(directory or package_dir())
    with _lock:
        if _loaded is None:
            manifest = read_manifest(directory)
            check_manifest(manifest)
            library = library_path(directory)
            WHEEL.require_library(library)
            import tensorflow as tf

            module = tf.load_op_library(library)
            WHEEL.check_embedded(_embedded_manifest(library), manifest, directory, library)
            _loaded, _loaded_from = module, directory
        elif directory != _loaded_from:
            raise WHEEL.second_copy(_loaded_from, directory)
    return _loaded


def _embedded_manifest(library):
    # type: (str) -> Dict[str, Any]
    """The manifest compiled into the library, read through its C function: works with eager execution
    disabled (TF1 graphs) too. ctypes gets the handle tf.load_op_library opened (same file)."""
    function = ctypes.CDLL(library).perseus_tf_build_manifest
    function.restype = ctypes.c_char_p
    return json.loads(function().decode())


def ops():
    # type: () -> Any
    """The op library's module, loading it on first use."""
    return load()


def build_manifest():
    # type: () -> Dict[str, Any]
    """The manifest compiled into the loaded library."""
    load()
    return _embedded_manifest(library_path(_loaded_from))
