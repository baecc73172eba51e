"""Loader of the perseus op library (tf.load_op_library) with the build-manifest check.

The wheel carries build_manifest.json next to the op library: the exact TensorFlow version it was
compiled against, TensorFlow's CUDA, the C++ ABI (tf.sysconfig.CXX11_ABI_FLAG), the C++ standard, the
compiler and the release. load() compares it with the running TensorFlow BEFORE the library is loaded
(a mismatched op library can crash on undefined symbols) and raises BuildMismatchError saying what
differs and which wheel to install instead. After loading it also checks that the library's own
embedded manifest is the file's (a swapped file is caught).

Python 3.6 compatible (TensorFlow 1.15 cells run on it).
"""
import ctypes
import json
import os
import threading
from typing import Any, Dict, List, Optional

MANIFEST_FILE = "build_manifest.json"
LIBRARY_FILE = "_perseus_tf_ops.so"
INSTALLER = "install_AIACC-Training.sh"

_lock = threading.Lock()
_loaded = None  # type: Optional[Any]
_loaded_from = None  # type: Optional[str]


class BuildMismatchError(ImportError):
    """perseus_tensorflow was built for another TensorFlow / CUDA / C++ ABI than the running one."""


class BrokenInstallError(ImportError):
    """The perseus_tensorflow files are missing or inconsistent."""


def package_dir():
    # type: () -> str
    return os.path.dirname(os.path.abspath(__file__))


def library_path(directory=None):
    # type: (Optional[str]) -> str
    return os.path.join(directory or package_dir(), LIBRARY_FILE)


def read_manifest(directory=None):
    # type: (Optional[str]) -> Dict[str, Any]
    path = os.path.join(directory or package_dir(), MANIFEST_FILE)
    try:
        with open(path) as handle:
            manifest = json.load(handle)
    except (IOError, OSError) as error:
        raise BrokenInstallError(
            "perseus_tensorflow is incomplete: cannot read %s (%s); reinstall the perseus_tensorflow wheel "
            "for your TensorFlow, or run %s" % (path, error, INSTALLER))
    except ValueError as error:
        raise BrokenInstallError(
            "perseus_tensorflow is damaged: %s is not valid JSON (%s); reinstall the perseus_tensorflow "
            "wheel for your TensorFlow, or run %s" % (path, error, INSTALLER))
    missing = [key for key in ("release", "version", "tensorflow_version", "tensorflow_cuda", "cxx11_abi",
                               "cxx_standard", "compiler") if key not in manifest]
    if missing:
        raise BrokenInstallError("perseus_tensorflow is damaged: %s lacks %s; reinstall it"
                                 % (path, ", ".join(missing)))
    return manifest


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


def _cuda_words(cuda):
    # type: (Optional[str]) -> str
    return "CUDA %s" % cuda if cuda else "CPU only"


def _abi_words(flag):
    # type: (bool) -> str
    return "cxx11 ABI" if flag else "pre-cxx11 ABI"


def mismatches(manifest, running):
    # type: (Dict[str, Any], Dict[str, Any]) -> List[str]
    """Each difference between the build and the running TensorFlow, in words."""
    found = []
    if manifest["tensorflow_version"] != running["tensorflow_version"]:
        found.append("TensorFlow %s (built) vs %s (installed)"
                     % (manifest["tensorflow_version"], running["tensorflow_version"]))
    if (manifest["tensorflow_cuda"] or None) != (running["tensorflow_cuda"] or None):
        found.append("%s (built) vs %s (installed)" % (_cuda_words(manifest["tensorflow_cuda"]),
                                                       _cuda_words(running["tensorflow_cuda"])))
    if bool(manifest["cxx11_abi"]) != bool(running["cxx11_abi"]):
        found.append("%s (built) vs %s (installed TensorFlow)" % (_abi_words(manifest["cxx11_abi"]),
                                                                  _abi_words(running["cxx11_abi"])))
    return found


def mismatch_message(manifest, running, found):
    # type: (Dict[str, Any], Dict[str, Any], List[str]) -> str
    public = running["tensorflow_version"].split("+")[0]
    compiler = manifest.get("compiler") or {}
    from perseus.horovod_kit.manifest import wheel_version
    return (
        "perseus_tensorflow %s was built for TensorFlow %s (%s, %s, C++%s, %s %s) but TensorFlow %s (%s, %s) "
        "is installed: %s. Install perseus_tensorflow %s (the wheel of the same release built for "
        "TensorFlow %s, %s), or run %s, which picks the matching wheel."
        % (manifest["version"], manifest["tensorflow_version"], _cuda_words(manifest["tensorflow_cuda"]),
           _abi_words(manifest["cxx11_abi"]), manifest["cxx_standard"], compiler.get("id", "?"),
           compiler.get("version", "?"), running["tensorflow_version"], _cuda_words(running["tensorflow_cuda"]),
           _abi_words(running["cxx11_abi"]), "; ".join(found), wheel_version(manifest["release"], public), public,
           _cuda_words(running["tensorflow_cuda"]), INSTALLER))


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
            if not os.path.isfile(library):
                raise BrokenInstallError(
                    "perseus_tensorflow is incomplete: %s is missing; reinstall the perseus_tensorflow wheel"
                    % library)
            import tensorflow as tf

            module = tf.load_op_library(library)
            embedded = _embedded_manifest(library)
            if embedded != manifest:
                raise BrokenInstallError(
                    "perseus_tensorflow is inconsistent: %s does not describe %s (the library was built as %s "
                    "for TensorFlow %s); reinstall the perseus_tensorflow wheel"
                    % (os.path.join(directory, MANIFEST_FILE), library, embedded.get("version"),
                       embedded.get("tensorflow_version")))
            _loaded, _loaded_from = module, directory
        elif directory != _loaded_from:
            raise BrokenInstallError("perseus op library already loaded from %s; cannot load a second copy from %s"
                                     % (_loaded_from, directory))
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
