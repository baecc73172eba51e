"""install_AIACC-Training.sh: the release's cell table, argument handling, and the installer program.

The program is the aiacc_installer package (detection, decision, mirror, download, sha256
verification, pip, import check, rollback) flattened into one module (installer_program.py) and
embedded as one here-document: it runs under the user's Python, 3.6 or newer, standard library only.
The exit codes come from aiacc_installer/exits.py, the one table behind the shell part, --help and docs.
"""

from __future__ import annotations

from collections.abc import Mapping

import json
from dataclasses import dataclass

from aiacc_installer.exits import EXIT_CODES

from .. import naming
from ..adapters import all_adapters
from ..adapters.runtime_table import runtime_rows
from ..model import Cell, ReleaseInfo
from .installer_program import HEREDOC_END, installer_program
from .output import RenderedFile
from .templates import render

# The exit codes the shell part itself exits with (before the Python program runs).
SHELL_EXITS = ("usage", "no_python")


def table_line(cell: Cell, path: str | None = None) -> str:
    """`torch 1.7.1 11.0 3.6 x86_64 cuda110/perseus_torch-...whl`: what the script decides on. `path`: the
    wheel's path as a build recorded it (its proven platform tag), else the release's name."""
    fields = (
        cell.framework.value,
        cell.framework_version,
        naming.cuda_or_cpu(cell.cuda),
        cell.python or "any",
        cell.arch.value,
        path or naming.wheel_path(cell),
    )
    if any(not f or any(ch.isspace() for ch in f) for f in fields):
        raise ValueError(f"cell {cell.key}: a table field is empty or has spaces: {fields}")
    return " ".join(fields)


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


def render_install_script(
    release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell], mirror_url: str | None = None,
    paths: Mapping[str, str] | None = None,
) -> RenderedFile:
    """`mirror_url`: the script's default mirror, where this copy is served from (default: the release's);
    `paths`: cell key -> the wheel path a build recorded (`index` passes the build record's)."""
    paths = paths or {}
    frameworks = installer_frameworks()
    content = render(
        "scripts/install_AIACC-Training.sh.j2",
        release=release,
        mirror_url=mirror_url or release.mirror_url,
        frameworks=frameworks,
        framework_names=[f.name for f in frameworks],
        framework_table=framework_table(),
        table=[table_line(c, paths.get(c.key)) for c in cells],
        exit_codes=EXIT_CODES,
        shell_exits=SHELL_EXITS,
        common_wheel=naming.common_wheel_path(release),
        installer_py=installer_program(),
        heredoc_end=HEREDOC_END,
    )
    return RenderedFile(path=naming.INSTALL_SCRIPT_NAME, content=content, kind="install-script", executable=True)
