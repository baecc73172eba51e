"""The install script's Python program, made from the aiacc_installer package: its modules in the
package's MODULES order as one module, each one's relative imports dropped (they name what an earlier
module defined). Refused, with the module and line, when the flattening would change the program: an
import of a later module, an `import ... as`, a `from . import module`, or one top-level name defined
by two modules. The CUDA-driver table (cuda_drivers) is generated from the matrix in use, not read from the
package's committed copy: a CUDA version added to the matrix reaches the script with no other edit.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

import aiacc_installer

from .. import cuda_drivers

PACKAGE_DIR = Path(aiacc_installer.__file__).parent
HEREDOC_END = "AIACC_INSTALLER_PY"


class FlattenError(ValueError):
    pass


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _relative_import_lines(path: Path, tree: ast.Module, earlier: set[str]) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        where = f"{path.name}:{node.lineno}"
        if node not in tree.body or node.level != 1 or not node.module:
            raise FlattenError(f"{where}: only top-level `from .module import name` lines can be flattened")
        if node.module not in earlier:
            raise FlattenError(f"{where}: .{node.module} is not a module listed before it in MODULES")
        if any(alias.asname for alias in node.names):
            raise FlattenError(f"{where}: `import ... as` would rename a name of another module")
        lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


GENERATED_MODULE = "cuda_drivers"  # aiacc_installer/cuda_drivers.py: cuda_drivers.render_installer's output


def installer_program() -> str:
    """The package as one module, for the script's here-document, its CUDA-driver table from the matrix's facts."""
    return _program(cuda_drivers.render_installer(cuda_drivers.load()))


@lru_cache(maxsize=2)
def _program(driver_table: str) -> str:
    return flatten(PACKAGE_DIR, aiacc_installer.MODULES, {GENERATED_MODULE: driver_table})


def flatten(package_dir: Path, modules: tuple[str, ...], generated: Mapping[str, str] | None = None) -> str:
    """`generated`: module -> its text, used instead of the package's file of that name."""
    parts: list[str] = []
    owner: dict[str, str] = {}
    earlier: set[str] = set()
    generated = generated or {}
    for module in modules:
        path = package_dir / f"{module}.py"
        text = generated[module] if module in generated else path.read_text(encoding="utf-8")
        tree = ast.parse(text, str(path))
        for name in _defined(tree):
            if name in owner:
                raise FlattenError(f"{path.name}: {name} is defined by {owner[name]}.py too")
            owner[name] = module
        dropped = _relative_import_lines(path, tree, earlier)
        kept = [line for number, line in enumerate(text.splitlines(), 1) if number not in dropped]
        if any(line.strip() == HEREDOC_END for line in kept):
            raise FlattenError(f"{path.name} must not contain the here-document terminator line {HEREDOC_END}")
        parts.append(f"# --- {module}.py " + "-" * (92 - len(module)) + "\n" + "\n".join(kept).strip("\n"))
        earlier.add(module)
    return "\n\n\n".join(parts)
