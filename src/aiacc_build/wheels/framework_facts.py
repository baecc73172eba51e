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

import json
import zipfile
from dataclasses import asdict
from pathlib import Path

import requests

from ..adapters import adapter_for
from ..errors import RegistryError
from ..adapters.base import FactsError, FrameworkFacts
from ..model import Cell, Framework
from ..registry import REGISTRY_TIMEOUT_S, open_remote_zip
from .frameworks import FrameworkArtifact
from ..hashing import inputs_key

__all__ = ["FactsError", "FrameworkFacts", "facts_of_installed", "facts_problem", "read_facts"]


def facts_of_installed(framework: Framework, site_packages: Path) -> FrameworkFacts | None:
    """The facts of the framework installed in an environment (None: its adapter has no reader)."""
    return adapter_for(framework).facts_of_installed(site_packages)


def read_facts(
    framework: Framework, artifact: FrameworkArtifact, cache_dir: Path, offline: bool
) -> FrameworkFacts | str | None:
    """The facts of a framework file; a string says why they could not be read; None: no reader for it."""
    adapter = adapter_for(framework)
    if not adapter.reads_facts:
        return None
    if artifact.is_local:
        try:
            with zipfile.ZipFile(artifact.location) as archive:
                return adapter.facts_from_wheel(archive)
        except (OSError, zipfile.BadZipFile, FactsError) as exc:
            return f"cannot read {artifact.filename}: {exc}"
    cached = cache_dir / f"{inputs_key('framework-facts-2', {'file': artifact.identity, 'url': artifact.location})}.json"
    if cached.is_file():
        return FrameworkFacts(**json.loads(cached.read_text()))
    if offline:
        return "offline, and the file was never inspected"
    try:
        with open_remote_zip(artifact.location, timeout=REGISTRY_TIMEOUT_S) as archive:
            facts = adapter.facts_from_wheel(archive)
    except (OSError, zipfile.BadZipFile, RegistryError, requests.RequestException, FactsError) as exc:
        return f"cannot inspect {artifact.filename} remotely ({type(exc).__name__}: {exc})"
    if facts is None:
        return None
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
