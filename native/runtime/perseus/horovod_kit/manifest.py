"""The build manifest a framework wheel carries next to its library (build_manifest.json: the exact framework
build it was compiled against, the compiler, the release), read and checked alike by every binding before the
library is loaded. The binding supplies what is framework-specific: the running framework's facts, how they are
compared, and how its library is loaded (perseus.<framework>._native)."""

import json
import os
from typing import Any, Dict, Mapping, Optional, Sequence

MANIFEST_FILE = "build_manifest.json"
INSTALLER = "install_AIACC-Training.sh"


class BuildMismatchError(ImportError):
    """A binding was built for another framework build (version, CUDA, C++ ABI, Python) than the running one."""


class BrokenInstallError(ImportError):
    """A binding's files are missing or inconsistent."""


class Wheel:
    """One binding's wheel: its distribution (perseus_mxnet), the framework as its messages name it (mxnet) and
    the manifest key of the framework's version (mxnet_version)."""

    def __init__(self, distribution: str, framework: str, version_key: str, required: Sequence[str]) -> None:
        self.distribution, self.framework, self.version_key = distribution, framework, version_key
        self.required = tuple(required)

    def read_manifest(self, directory: str) -> Dict[str, Any]:
        path = os.path.join(directory, MANIFEST_FILE)
        try:
            with open(path) as handle:
                manifest = json.load(handle)
        except (IOError, OSError) as error:
            raise BrokenInstallError("{0} is incomplete: cannot read {1} ({2}); reinstall the {0} wheel for your "
                                     "{3}, or run {4}".format(self.distribution, path, error, self.framework,
                                                              INSTALLER))
        except ValueError as error:
            raise BrokenInstallError("{0} is damaged: {1} is not valid JSON ({2}); reinstall the {0} wheel for your "
                                     "{3}, or run {4}".format(self.distribution, path, error, self.framework,
                                                              INSTALLER))
        missing = [key for key in self.required if key not in manifest]
        if missing:
            raise BrokenInstallError("{} is damaged: {} lacks {}; reinstall it".format(
                self.distribution, path, ", ".join(missing)))
        return manifest

    def require_library(self, library: str) -> None:
        if not os.path.isfile(library):
            raise BrokenInstallError("{0} is incomplete: {1} is missing; reinstall the {0} wheel".format(
                self.distribution, library))

    def check_embedded(self, embedded: Mapping[str, Any], manifest: Mapping[str, Any], directory: str,
                       library: str) -> None:
        """The manifest compiled into the loaded library must be the file's (a swapped file is caught)."""
        if dict(embedded) != dict(manifest):
            raise BrokenInstallError(
                "{0} is inconsistent: {1} does not describe {2} (the library was built as {3} for {4} {5}); "
                "reinstall the {0} wheel".format(self.distribution, os.path.join(directory, MANIFEST_FILE), library,
                                                 embedded.get("version"), self.framework,
                                                 embedded.get(self.version_key)))

    def second_copy(self, loaded_from: str, directory: str) -> BrokenInstallError:
        return BrokenInstallError("{} is already loaded from {}; cannot load a second copy from {}".format(
            self.distribution, loaded_from, directory))


def wheel_version(release: str, framework_version: str) -> str:
    """The version of a binding wheel, `<release>+<framework public version>` (2.0.0+2.13.0): what the advice to
    install one names (the builds make it by native/release/perseus_release.py, the same rule)."""
    return "{}+{}".format(release, framework_version.split("+")[0])


def cuda_words(cuda: Optional[str]) -> str:
    return "CUDA {}".format(cuda) if cuda else "CPU only"


def abi_words(cxx11_abi: bool) -> str:
    return "cxx11 ABI" if cxx11_abi else "pre-cxx11 ABI"
