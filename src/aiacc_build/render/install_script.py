"""install_AIACC-Training.sh: the release's cell table, argument handling, and the installer program.

The program is scripts/install_decide.py (detection, decision) followed by scripts/install_apply.py
(mirror, download, sha256 verification, pip, import check, rollback), embedded verbatim as one
here-document: it runs under the user's Python, 3.6 or newer, with the standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from .. import naming
from ..adapters import all_adapters
from ..adapters.runtime_table import runtime_rows
from ..model import Cell, ReleaseInfo
from ..paths import REPO_ROOT
from .output import RenderedFile
from .templates import render

DECIDE_PY = REPO_ROOT / "scripts" / "install_decide.py"
APPLY_PY = REPO_ROOT / "scripts" / "install_apply.py"
HEREDOC_END = "AIACC_INSTALLER_PY"
# name -> (exit code, what it means); the script's --help lists them in this order.
EXIT_CODES: dict[str, tuple[int, str]] = {
    "usage": (2, "bad arguments"),
    "no_python": (3, "no Python 3.6+ (the given command is missing, is not Python, or is too old)"),
    "no_pip": (4, "pip is not installed for that Python"),
    "no_framework": (5, "no framework (or not the one asked for) is installed for that Python"),
    "unsupported": (6, "this release has no build for an installed framework; the nearest cells are listed"),
    "externally_managed": (7, "a system Python that refuses pip (PEP 668): use a virtual environment"),
    "untrusted_mirror": (8, "the mirror is plain HTTP on another host, not a URL or folder, or its TLS certificate does not verify"),
    "network": (9, "the mirror cannot be reached or read (after retries)"),
    "checksum": (10, "a downloaded wheel's size or sha256 differs from the mirror's manifest; nothing was installed"),
    "mirror_mismatch": (11, "the mirror's manifest disagrees with this script's table, or lacks the chosen wheel"),
    "install_failed": (12, "pip or the import check failed; the environment was restored as it was"),
}


def table_line(cell: Cell) -> str:
    """`torch 1.7.1 11.0 3.6 x86_64 cuda110/perseus_torch-...whl`: what the script decides on."""
    fields = (
        cell.framework.value,
        cell.framework_version,
        cell.cuda or "cpu",
        cell.python or "any",
        cell.arch.value,
        naming.wheel_path(cell),
    )
    if any(not f or any(ch.isspace() for ch in f) for f in fields):
        raise ValueError(f"cell {cell.key}: a table field is empty or has spaces: {fields}")
    return " ".join(fields)


@lru_cache(maxsize=1)
def installer_program() -> str:
    """The Python the script runs: the decision part, then the installing part (one namespace)."""
    parts = []
    for path in (DECIDE_PY, APPLY_PY):
        text = path.read_text(encoding="utf-8").rstrip("\n")
        if any(line.strip() == HEREDOC_END for line in text.splitlines()):
            raise ValueError(f"{path} must not contain the here-document terminator line {HEREDOC_END}")
        parts.append(text)
    return "\n\n\n".join(parts)


@dataclass(frozen=True)
class InstallerFramework:
    name: str
    aliases: list[str]  # other spellings --framework accepts


# The installer needs these of each adapter's runtime row (not the doctor's probe).
INSTALLER_KEYS = ("name", "display_name", "import_name", "distributions", "distribution_pattern",
                  "binding_distribution", "selftest_module", "installer")


def installer_frameworks() -> list[InstallerFramework]:
    """Every registered framework and its other spellings: its display name and its Docker tag abbreviation."""
    out = []
    for adapter in all_adapters():
        spellings = [adapter.display_name.lower(), adapter.tag_abbreviation]
        out.append(InstallerFramework(adapter.name, [a for a in dict.fromkeys(spellings) if a != adapter.name]))
    return out


def framework_table() -> str:
    """One JSON row per framework adapter, one per line (the script's AIACC_FRAMEWORKS)."""
    rows = [{k: row[k] for k in INSTALLER_KEYS} for row in runtime_rows()]
    return "[\n" + ",\n".join(json.dumps(r, sort_keys=False) for r in rows) + "\n]"


def render_install_script(release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell]) -> RenderedFile:
    frameworks = installer_frameworks()
    content = render(
        "scripts/install_AIACC-Training.sh.j2",
        release=release,
        frameworks=frameworks,
        framework_names=[f.name for f in frameworks],
        framework_table=framework_table(),
        table=[table_line(c) for c in cells],
        exit_codes={name: code for name, (code, _) in EXIT_CODES.items()},
        exit_help={name: text for name, (_, text) in EXIT_CODES.items()},
        common_wheel=naming.common_wheel_path(release),
        installer_py=installer_program(),
        heredoc_end=HEREDOC_END,
    )
    return RenderedFile(path=naming.INSTALL_SCRIPT_NAME, content=content, kind="install-script", executable=True)
