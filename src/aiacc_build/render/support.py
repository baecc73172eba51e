"""Which cells this machine could build: the renderer picks the Docker images made locally from it.

Where a cell was actually built is the build record's to say (render.support_list reads it).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

from ..adapters import adapter_for
from ..model import Cell

PYENV_VERSIONS = Path("/root/.pyenv/versions")


@dataclass(frozen=True)
class BuildHost:
    """What a machine offers for building wheels: its architecture, Pythons and CUDA toolkits."""

    arch: str
    pythons: frozenset[str]  # minor versions with an interpreter, e.g. {"3.6", "3.11"}
    cuda_toolkits: tuple[str, ...] = ()  # CUDA major.minor of each real nvcc found
    pythons_root: str = str(PYENV_VERSIONS)

    @classmethod
    def detect(cls, pythons_root: Path = PYENV_VERSIONS) -> BuildHost:
        from ..wheels.toolchain import cuda_compilers

        return cls(
            arch=platform.machine(),
            pythons=frozenset(_pyenv_minors(pythons_root)),
            cuda_toolkits=tuple(sorted({c.cuda for c in cuda_compilers()})),
            pythons_root=str(pythons_root),
        )


def _pyenv_minors(root: Path) -> set[str]:
    found: set[str] = set()
    if not root.is_dir():
        return found
    for entry in root.iterdir():
        parts = entry.name.split(".")
        if len(parts) >= 2 and parts[0] == "3" and parts[1].isdigit():
            minor = f"3.{parts[1]}"
            if (entry / "bin" / f"python{minor}").exists():
                found.add(minor)
    return found


def build_python(cell: Cell) -> str:
    """The interpreter a wheel is built with: its own Python, or a Python-independent wheel's first."""
    return cell.python or cell.env_pythons[0]


@dataclass(frozen=True)
class BuildLocation:
    where: str  # "here", "ci", or "none" (its framework has no binding yet)
    reason: str

    @property
    def here(self) -> bool:
        return self.where == "here"


def build_location(cell: Cell, host: BuildHost) -> BuildLocation:
    """Can this host build the cell's wheel for real? If not, it is built in CI; the reason says why.
    A cell whose framework has no binding is built nowhere ("none")."""
    missing_binding = adapter_for(cell.framework).binding_missing
    if missing_binding is not None:
        return BuildLocation("none", missing_binding)
    python = build_python(cell)
    missing: list[str] = []
    if cell.arch.value != host.arch:
        missing.append(f"{cell.arch.value} wheels need an {cell.arch.value} machine (this one is {host.arch})")
    if python not in host.pythons:
        missing.append(f"no Python {python} interpreter under {host.pythons_root}")
    if cell.cuda is not None and cell.cuda not in host.cuda_toolkits:
        missing.append(f"no CUDA {cell.cuda} toolkit here (local toolkits: {', '.join(host.cuda_toolkits) or 'none'})")
    if missing:
        return BuildLocation("ci", "; ".join(missing))
    accel = "CPU build" if cell.cuda is None else f"CUDA {cell.cuda} toolkit"
    return BuildLocation("here", f"{accel} and Python {python} available on this {host.arch} machine")
