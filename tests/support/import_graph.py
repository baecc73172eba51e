"""The project's own import graph, imports inside functions included (type-only imports under TYPE_CHECKING
excepted), and its circles (strongly connected components of more than one module).

    .venv/bin/python tests/support/import_graph.py [--json]     # prints every circle; exit 1 when there is one
"""

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Dict, List, Set

REPO = Path(__file__).resolve().parents[2]
# (source root, top-level package) of every Python package the project ships or runs
ROOTS = [(REPO / "src", "aiacc_build"), (REPO / "src", "aiacc_installer"), (REPO / "native" / "runtime", "perseus")] + [
    (binding, "perseus") for binding in sorted((REPO / "native" / "bindings").iterdir()) if (binding / "perseus").is_dir()]


def modules() -> Dict[str, Path]:
    found: Dict[str, Path] = {}
    for root, package in ROOTS:
        for path in sorted((root / package).rglob("*.py")):
            if "examples" in path.parts or "build" in path.relative_to(root).parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def type_only_lines(tree: ast.AST) -> Set[int]:
    """The lines of imports under `if TYPE_CHECKING:` (type-only, never run)."""
    lines: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _resolve(name: str, known: Dict[str, Path]) -> str:
    """The longest known module that `name` is or lies in ("" when it is not the project's)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return ""


def graph() -> Dict[str, Set[str]]:
    known = modules()
    edges: Dict[str, Set[str]] = {name: set() for name in known}
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        skip = type_only_lines(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets: List[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [stem + "." + alias.name for alias in node.names] + [stem]
            for target in targets:
                found = _resolve(target, known)
                if found and found != name and not name.startswith(found + "."):  # a package's own __init__ excepted
                    edges[name].add(found)
                    break
    return edges


def circles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the circles as JSON")
    args = parser.parse_args()
    found = circles(graph())
    if args.json:
        print(json.dumps(found, indent=2))
    else:
        for component in found:
            print("circle: " + " <-> ".join(component))
        print("{} import circle(s)".format(len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
