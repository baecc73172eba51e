"""install_AIACC-Training.sh: the release's cell table, argument handling, detection and decision.

The decision logic is scripts/install_decide.py, embedded verbatim (it runs under the user's Python,
3.6 or newer). Installing itself is a later step: the script says so and exits with its own code.
"""

from __future__ import annotations

from functools import lru_cache

from .. import naming
from ..model import Cell, ReleaseInfo
from ..paths import REPO_ROOT
from .output import RenderedFile
from .templates import render

DECIDE_PY = REPO_ROOT / "scripts" / "install_decide.py"
# name -> (exit code, what it means); the script's --help lists them in this order.
EXIT_CODES: dict[str, tuple[int, str]] = {
    "usage": (2, "bad arguments"),
    "no_python": (3, "no Python 3.6+ (the given command is missing, is not Python, or is too old)"),
    "no_pip": (4, "pip is not installed for that Python"),
    "no_framework": (5, "no framework (or not the one asked for) is installed for that Python"),
    "unsupported": (6, "this release has no build for an installed framework; the nearest cells are listed"),
    "externally_managed": (7, "a system Python that refuses pip (PEP 668): use a virtual environment"),
    "not_supported_yet": (8, "installing is not supported yet by this script (use --dry-run)"),
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
def _decide_py() -> str:
    text = DECIDE_PY.read_text(encoding="utf-8").rstrip("\n")
    if any(line.strip() == "AIACC_DECIDE_PY" for line in text.splitlines()):
        raise ValueError(f"{DECIDE_PY} must not contain the here-document terminator line AIACC_DECIDE_PY")
    return text


def render_install_script(release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell]) -> RenderedFile:
    content = render(
        "scripts/install_AIACC-Training.sh.j2",
        release=release,
        table=[table_line(c) for c in cells],
        exit_codes={name: code for name, (code, _) in EXIT_CODES.items()},
        exit_help={name: text for name, (_, text) in EXIT_CODES.items()},
        common_wheel=naming.common_wheel_path(release),
        decide_py=_decide_py(),
    )
    return RenderedFile(path=naming.INSTALL_SCRIPT_NAME, content=content, kind="install-script", executable=True)
