"""What a framework file was really built with (CUDA toolkit, C++ ABI), read from the file itself.

A cell's pin can be exact and still name a build of another toolkit: PyPI's unlabelled `torch==X` is
whatever CUDA upstream chose for X (10.2 for 1.8.0, 13.0 for 2.13.0, 13.2 for 2.15.0). The local label
catches only labelled builds, so the planner reads the facts from the wheel: torch's `torch/version.py`
(`cuda = '13.0'`, None for a CPU build) and `TorchConfig.cmake` (`-D_GLIBCXX_USE_CXX11_ABI=0` on a
pre-cxx11 build; no flag: the compiler's default, the cxx11 ABI). A local file is opened in place; a
registry file is read with HTTP range requests (its zip directory and two small members, ~1 s, never
the whole file) and the answer is kept in the registry cache. The build checks the same facts again
in the installed build environment, so a cell whose file could not be inspected (offline) still never
builds against the wrong toolkit or ABI.

The facts also name the framework's C++ interface: a digest of the sha256 that the wheel's RECORD lists
for every header and CMake file. Builds of one framework release for different Pythons ship the same
interface (torch 2.6.0 cp39 and cp312 do), and a binding that never touches the Python C API compiles
to the same library against it, so the driver builds it once for all those cells (driver.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import requests
from remotezip import RemoteZip, RemoteZipError

from ..model import Cell, Framework
from .frameworks import REGISTRY_TIMEOUT_S, FrameworkArtifact
from .hashing import inputs_key

# Members that carry the facts, relative to site-packages (the same paths inside the wheel).
TORCH_VERSION_FILE = "torch/version.py"
TORCH_CONFIG_FILE = "torch/share/cmake/Torch/TorchConfig.cmake"
# What a C++ build against torch reads: its headers and its CMake package.
TORCH_INTERFACE_PREFIXES = ("torch/include/", "torch/share/cmake/")
_RECORD_MEMBER = re.compile(r"^[^/]+\.dist-info/RECORD$")

_CUDA_LINE = re.compile(r"^cuda(?:\s*:[^=]*)?\s*=\s*(?:'([^']*)'|\"([^\"]*)\"|None)\s*$", re.MULTILINE)
_ABI_FLAG = re.compile(r"-D_GLIBCXX_USE_CXX11_ABI=([01])")


class FactsError(RuntimeError):
    pass


@dataclass(frozen=True)
class FrameworkFacts:
    cuda: str | None  # the CUDA major.minor the framework was compiled with; None: a CPU build
    cxx11_abi: bool
    interface: str | None = None  # digest of its headers + CMake files (None: unknown, e.g. no RECORD)

    @property
    def abi_label(self) -> str:
        return "cxx11" if self.cxx11_abi else "pre-cxx11"

    @property
    def toolkit_label(self) -> str:
        return f"CUDA {self.cuda}" if self.cuda else "CPU"


def parse_torch_facts(version_py: str, torch_config: str | None) -> FrameworkFacts:
    """The facts from torch's version.py and TorchConfig.cmake texts."""
    match = _CUDA_LINE.search(version_py)
    if match is None:
        raise FactsError("torch/version.py has no `cuda = ...` line")
    cuda = match[1] or match[2] or None
    if cuda is not None:
        cuda = ".".join(cuda.split(".")[:2])
    flag = _ABI_FLAG.search(torch_config or "")
    return FrameworkFacts(cuda=cuda, cxx11_abi=flag is None or flag[1] == "1")


def interface_digest(record: str, prefixes: tuple[str, ...] = TORCH_INTERFACE_PREFIXES) -> str | None:
    """The digest of the RECORD lines (path + sha256) of the files under `prefixes`; None when it lists none."""
    lines = []
    for line in record.splitlines():
        path, _, rest = line.partition(",")
        if path.startswith(prefixes):
            lines.append(f"{path},{rest.split(',')[0]}")
    if not lines:
        return None
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()


def _facts_from_zip(archive: zipfile.ZipFile) -> FrameworkFacts:
    names = set(archive.namelist())
    if TORCH_VERSION_FILE not in names:
        raise FactsError(f"no {TORCH_VERSION_FILE} in the wheel")
    config = archive.read(TORCH_CONFIG_FILE).decode() if TORCH_CONFIG_FILE in names else None
    facts = parse_torch_facts(archive.read(TORCH_VERSION_FILE).decode(), config)
    records = [n for n in names if _RECORD_MEMBER.match(n)]
    if len(records) == 1:
        facts = replace(facts, interface=interface_digest(archive.read(records[0]).decode()))
    return facts


def facts_of_installed(framework: Framework, site_packages: Path) -> FrameworkFacts | None:
    """The facts of the framework installed in an environment (None: no reader for this framework)."""
    if framework is not Framework.TORCH:
        return None
    version_py = site_packages / TORCH_VERSION_FILE
    if not version_py.is_file():
        raise FactsError(f"no torch installed in {site_packages}")
    config = site_packages / TORCH_CONFIG_FILE
    facts = parse_torch_facts(version_py.read_text(), config.read_text() if config.is_file() else None)
    records = list(site_packages.glob("torch-*.dist-info/RECORD"))
    if len(records) == 1:
        facts = replace(facts, interface=interface_digest(records[0].read_text()))
    return facts


def read_facts(
    framework: Framework, artifact: FrameworkArtifact, cache_dir: Path, offline: bool
) -> FrameworkFacts | str | None:
    """The facts of a framework file; a string says why they could not be read; None: no reader for it."""
    if framework is not Framework.TORCH:
        return None
    if artifact.is_local:
        try:
            with zipfile.ZipFile(artifact.location) as archive:
                return _facts_from_zip(archive)
        except (OSError, zipfile.BadZipFile, FactsError) as exc:
            return f"cannot read {artifact.filename}: {exc}"
    cached = cache_dir / f"{inputs_key('framework-facts-2', {'file': artifact.identity, 'url': artifact.location})}.json"
    if cached.is_file():
        return FrameworkFacts(**json.loads(cached.read_text()))
    if offline:
        return "offline, and the file was never inspected"
    try:
        with RemoteZip(artifact.location, timeout=REGISTRY_TIMEOUT_S) as archive:
            facts = _facts_from_zip(archive)
    except (OSError, zipfile.BadZipFile, RemoteZipError, requests.RequestException, FactsError) as exc:
        return f"cannot inspect {artifact.filename} remotely ({type(exc).__name__}: {exc})"
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(facts)))
    tmp.replace(cached)
    return facts


def facts_problem(cell: Cell, facts: FrameworkFacts, filename: str) -> str | None:
    """Why this framework build does not fit the cell (wrong toolkit or ABI), or None when it fits."""
    if facts.cuda != cell.cuda:
        declared = f"CUDA {cell.cuda}" if cell.cuda else "a CPU build"
        return f"framework file {filename} is a {facts.toolkit_label} build, the cell declares {declared}"
    if cell.build.cxx11_abi is not None and facts.cxx11_abi != cell.build.cxx11_abi:
        declared = "cxx11" if cell.build.cxx11_abi else "pre-cxx11"
        return f"framework file {filename} uses the {facts.abi_label} C++ ABI, the cell declares {declared}"
    return None
