"""Loader of the compiled perseus ops (torch.ops.perseus.*) with the build-manifest check.

The wheel carries build_manifest.json next to the ops library: the exact torch version it was
compiled against (with its local label, e.g. 2.13.0+cpu), torch's CUDA version, the C++ ABI, the
Python tag, the compiler and the release. load() compares it with the running torch BEFORE the
library is loaded (a mismatched library could crash on undefined symbols) and raises
BuildMismatchError saying what differs and which wheel to install instead. After loading it also
checks that the library's own embedded manifest is the file's (a swapped file is caught).

Python 3.6 compatible (the 1.5.0 release ships py36 cells).
"""
import json
import os
import sys
import threading
from typing import Any, Dict, List, Optional

from perseus.horovod_kit.manifest import (INSTALLER, MANIFEST_FILE, BrokenInstallError,  # noqa: F401
                                          BuildMismatchError, Wheel, abi_words, cuda_words, wheel_version)

LIBRARY_FILE = "_perseus_ops.so"
WHEEL = Wheel("perseus_torch", "torch", "torch_version",
              ("release", "version", "torch_version", "torch_cuda", "cxx11_abi", "python_tag"))

_lock = threading.Lock()
_loaded_from = None  # type: Optional[str]


def package_dir():
    # type: () -> str
    return os.path.dirname(os.path.abspath(__file__))


def read_manifest(directory=None):
    # type: (Optional[str]) -> Dict[str, Any]
    return WHEEL.read_manifest(directory or package_dir())


def running_environment():
    # type: () -> Dict[str, Any]
    """What the manifest is compared with: the imported torch and this interpreter."""
    import torch

    return {
        "torch_version": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
        "python_tag": "cp%d%d" % sys.version_info[:2],
    }


def mismatches(manifest, running):
    # type: (Dict[str, Any], Dict[str, Any]) -> List[str]
    """Each difference between the build and the running environment, in words."""
    found = []
    if manifest["torch_version"] != running["torch_version"]:
        found.append("torch %s (built) vs %s (installed)" % (manifest["torch_version"], running["torch_version"]))
    if (manifest["torch_cuda"] or None) != (running["torch_cuda"] or None):
        found.append("%s (built) vs %s (installed)" % (cuda_words(manifest["torch_cuda"]),
                                                       cuda_words(running["torch_cuda"])))
    if bool(manifest["cxx11_abi"]) != bool(running["cxx11_abi"]):
        found.append("%s (built) vs %s (installed torch)" % (abi_words(manifest["cxx11_abi"]),
                                                             abi_words(running["cxx11_abi"])))
    if manifest["python_tag"] not in ("py3", running["python_tag"]):
        found.append("Python %s (built) vs %s (running)" % (manifest["python_tag"], running["python_tag"]))
    return found


def mismatch_message(manifest, running, found):
    # type: (Dict[str, Any], Dict[str, Any], List[str]) -> str
    return (
        "perseus_torch %s was built for torch %s (%s, %s, %s) but torch %s (%s, %s, %s) is installed: %s. "
        "Install perseus_torch %s built for %s and %s (the wheel of the same release for your torch), "
        "or run %s, which picks the matching wheel."
        % (manifest["version"], manifest["torch_version"], cuda_words(manifest["torch_cuda"]),
           abi_words(manifest["cxx11_abi"]), manifest["python_tag"],
           running["torch_version"], cuda_words(running["torch_cuda"]), abi_words(running["cxx11_abi"]),
           running["python_tag"], "; ".join(found),
           wheel_version(manifest["release"], running["torch_version"]), cuda_words(running["torch_cuda"]), running["python_tag"], INSTALLER))


def check_manifest(manifest, running=None):
    # type: (Dict[str, Any], Optional[Dict[str, Any]]) -> None
    running = running if running is not None else running_environment()
    found = mismatches(manifest, running)
    if found:
        raise BuildMismatchError(mismatch_message(manifest, running, found))


def load(directory=None):
    # type: (Optional[str]) -> Any
    """Checks the manifest, loads the ops library once, returns the torch.ops.perseus namespace."""
    global _loaded_from
    import torch

    directory = directory or package_dir()
    with _lock:
        if _loaded_from is None:
            manifest = read_manifest(directory)
            check_manifest(manifest)
            library = os.path.join(directory, LIBRARY_FILE)
            WHEEL.require_library(library)
            torch.ops.load_library(library)
            WHEEL.check_embedded(json.loads(torch.ops.perseus.build_manifest()), manifest, directory, library)
            _loaded_from = directory
        elif os.path.abspath(directory) != _loaded_from:
            raise WHEEL.second_copy(_loaded_from, directory)
    return torch.ops.perseus


def ops():
    # type: () -> Any
    """torch.ops.perseus, loading the library on first use."""
    return load()


def build_manifest():
    # type: () -> Dict[str, Any]
    """The manifest compiled into the loaded library."""
    return json.loads(load().build_manifest())
