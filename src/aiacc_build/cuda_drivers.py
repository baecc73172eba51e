"""The CUDA-driver facts (matrix/facts/cuda_drivers.yaml) and the two tables generated from them for programs
that run without this tool: the install script's (aiacc_installer/cuda_drivers.py: the newest CUDA a driver runs)
and perseus doctor's (native/runtime/perseus/_cuda_drivers.py: the oldest driver a CUDA runtime runs on).
`aiacc-build matrix driver-tables --write|--check`; a test keeps both current."""

from __future__ import annotations

import pprint
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import MatrixError
from .paths import NATIVE_DIR, REPO_ROOT, facts_dir

INSTALLER_TABLE = REPO_ROOT / "src" / "aiacc_installer" / "cuda_drivers.py"
DOCTOR_TABLE = NATIVE_DIR / "runtime" / "perseus" / "_cuda_drivers.py"


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class DriverFacts:
    toolkits: tuple[tuple[str, str], ...]  # (CUDA, oldest driver of its toolkit), newest CUDA first
    minor_compatibility: tuple[tuple[int, str], ...]  # (CUDA major, oldest driver of any runtime of it)

    def doctor_rows(self) -> list[tuple[tuple[int, int], str]]:
        """((major, minor), oldest driver): majors with minor-version compatibility once (at minor 0), older
        majors per minor."""
        compatible = dict(self.minor_compatibility)
        rows = [((major, 0), driver) for major, driver in self.minor_compatibility]
        for cuda, driver in self.toolkits:
            major, minor = _numbers(cuda)[:2]
            if major not in compatible:
                rows.append(((major, minor), driver))
        return sorted(rows)


def facts_path() -> Path:
    """The facts of the matrix in use (paths.matrix_dir)."""
    return facts_dir() / "cuda_drivers.yaml"


def load(path: Path | None = None) -> DriverFacts:
    path = path or facts_path()
    data = yaml.safe_load(path.read_text())
    problems = []
    toolkits = [(str(cuda), str(driver)) for cuda, driver in (data.get("toolkits") or {}).items()]
    compat = [(int(major), str(driver)) for major, driver in (data.get("minor_version_compatibility") or {}).items()]
    for cuda, driver in toolkits:
        try:
            _numbers(cuda), _numbers(driver)
        except ValueError:
            problems.append(f"{path}: toolkits: {cuda}: {driver} is not a CUDA version and a driver version")
    if [c for c, _ in toolkits] != sorted((c for c, _ in toolkits), key=_numbers, reverse=True):
        problems.append(f"{path}: toolkits: list the CUDA versions newest first")
    majors = {_numbers(c)[0] for c, _ in toolkits if not problems}
    for major, _ in compat:
        if major not in majors:
            problems.append(f"{path}: minor_version_compatibility: {major} has no toolkit under toolkits")
    if problems:
        raise MatrixError(problems)
    return DriverFacts(tuple(toolkits), tuple(sorted(compat)))


def render_installer(facts: DriverFacts) -> str:
    return ('"""The oldest Linux driver of each CUDA toolkit, newest first: generated from matrix/facts/cuda_drivers.yaml\n'
            'by `aiacc-build matrix driver-tables --write`. Do not edit."""\n\n'
            "DRIVER_FOR_CUDA = " + pprint.pformat(facts.toolkits, width=110) + "\n")


def render_doctor(facts: DriverFacts) -> str:
    return ('"""The oldest Linux driver of each CUDA runtime ((major, minor), driver; CUDA 11 and later: minor-version\n'
            "compatibility, one row per major at minor 0): generated from matrix/facts/cuda_drivers.yaml by\n"
            '`aiacc-build matrix driver-tables --write`. Do not edit."""\n\n'
            "MIN_DRIVER = " + pprint.pformat(facts.doctor_rows(), width=110) + "\n")


def rendered(facts: DriverFacts | None = None) -> dict[Path, str]:
    facts = facts or load()
    return {INSTALLER_TABLE: render_installer(facts), DOCTOR_TABLE: render_doctor(facts)}


def stale() -> list[Path]:
    return [path for path, text in rendered().items() if not path.is_file() or path.read_text() != text]


def write() -> list[Path]:
    changed = stale()
    for path, text in rendered().items():
        if path in changed:
            path.write_text(text)
    return changed
