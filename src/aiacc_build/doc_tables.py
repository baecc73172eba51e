"""Tables in README.md and docs/*.md that are generated, never typed: the command table, the build
tool's exit codes, the install script's exit codes. Each lives between two markers:

    <!-- generated: NAME (tests/test_doc_tables.py; AIACC_UPDATE_GOLDEN=1 rewrites) -->
    ...
    <!-- end generated -->
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import click

from .paths import REPO_ROOT

BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+)[^>]*-->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)
DOCUMENTS = (REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def command_table() -> str:
    """One row per `aiacc-build` command group: its subcommands and the first line of its help."""
    from .cli import _register, cli

    _register()
    rows = ["| command | subcommands | what |", "| --- | --- | --- |"]
    for name in sorted(cli.commands):
        command = cli.commands[name]
        subs = ", ".join(sorted(command.commands)) if isinstance(command, click.Group) else ""
        rows.append(f"| `aiacc-build {name}` | {subs} | {_cell(command.get_short_help_str(limit=200))} |")
    return "\n".join(rows)


def tool_exit_codes() -> str:
    from .errors import exit_codes

    rows = ["| code | meaning |", "| --- | --- |"]
    rows += [f"| {code} | {_cell(text)} |" for code, text in exit_codes().items()]
    return "\n".join(rows)


def installer_exit_codes() -> str:
    from aiacc_installer.exits import EXIT_CODES

    rows = ["| code | meaning |", "| --- | --- |"]
    rows += [f"| {e.code} | {_cell(e.meaning)} |" for e in EXIT_CODES]
    return "\n".join(rows)


def horovod_variables() -> str:
    """The HOROVOD_* table, from its one declaration in perseus-common (loaded from its file, standard library only)."""
    import importlib.util

    from .paths import NATIVE_DIR

    path = NATIVE_DIR / "runtime" / "perseus" / "horovod_variables.py"
    spec = importlib.util.spec_from_file_location("_perseus_horovod_variables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module.table().rstrip("\n")


GENERATORS: dict[str, Callable[[], str]] = {
    "commands": command_table,
    "tool-exit-codes": tool_exit_codes,
    "installer-exit-codes": installer_exit_codes,
    "horovod-variables": horovod_variables,
}


def refresh(text: str, where: str = "text") -> str:
    """The text with every generated block made current; an unknown block name is an error."""

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in GENERATORS:
            raise ValueError(f"{where}: unknown generated block {name!r}; known: {', '.join(GENERATORS)}")
        return match.group(1) + GENERATORS[name]() + "\n" + match.group(4)

    return BLOCK.sub(replace, text)


def blocks(path: Path) -> list[str]:
    return [m.group("name") for m in BLOCK.finditer(path.read_text())]
