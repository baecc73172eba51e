"""Layers point one way: the model and the adapters know nothing of the steps that use them, and the
renderer does not reach into the checks (type-only imports under TYPE_CHECKING excepted)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support.import_graph import type_only_lines

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "aiacc_build"
STEPS = ("wheels", "toolkits", "render", "checks", "images", "index")
# layer -> the packages its modules must not import at run time
FORBIDDEN = {
    "model.py": STEPS + ("matrix", "adapters", "naming"),  # a leaf: the adapters register the frameworks it knows
    "naming.py": STEPS + ("matrix",),
    "adapters": STEPS + ("matrix",),
    "render": ("checks",),
}


def _modules(layer: str) -> list[Path]:
    path = PACKAGE / layer
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]




def _imported_packages(module: Path) -> list[tuple[int, str]]:
    """(line, first package under aiacc_build) of every run-time import of the tool's own modules."""
    tree = ast.parse(module.read_text())
    type_only = type_only_lines(tree)
    depth = len(module.relative_to(PACKAGE).parts) - 1  # how many levels below aiacc_build
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.lineno in type_only:
            continue
        if node.level == 0:
            parts = (node.module or "").split(".")
            if parts[0] == "aiacc_build" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
            continue
        up = node.level - 1  # levels above the module's own package
        if up > depth:
            continue
        base = list(module.relative_to(PACKAGE).parts[:-1])[: depth - up]
        target = base + (node.module.split(".") if node.module else [])
        if target:
            found.append((node.lineno, target[0]))
        else:
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layers_point_one_way(layer):
    offences = [
        f"{module.relative_to(PACKAGE)}:{line} imports aiacc_build.{package}"
        for module in _modules(layer)
        for line, package in _imported_packages(module)
        if package in FORBIDDEN[layer] and not module.relative_to(PACKAGE).parts[0] == package
    ]
    assert offences == []
