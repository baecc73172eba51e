"""YAML loading that remembers where every value came from.

PyYAML's composer keeps a start mark on every node; this module turns the node tree into plain
Python data plus a map from each value's path (tuple of keys / indexes) to its 1-based line, so
validation errors found later (by pydantic or by the derivation rules) can name file and line.
Duplicate mapping keys are reported here, since plain `yaml.safe_load` silently keeps the last one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Path_ = tuple[str | int, ...]


@dataclass
class LocatedData:
    """Parsed YAML with the line of every mapping key, sequence item and value."""

    source: Path
    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def line_of(self, path: Path_) -> int:
        """Line of `path`, or of its nearest located parent (pydantic may point inside a value)."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), 1)

    def where(self, path: Path_) -> str:
        return f"{self.source}:{self.line_of(path)}"


_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _scalar(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    # Numbers stay the text that was written: versions like 3.10 or 10.0 must not become floats
    # (3.10 -> 3.1). Nothing in a matrix is arithmetic.
    if node.tag in _NUMBER_TAGS:
        return node.value
    return loader.construct_object(node, deep=True)


def load_located(source: Path, text: str | None = None) -> LocatedData:
    """Parse one YAML document; syntax errors and duplicate keys become problems with lines."""
    source = Path(source)
    if text is None:
        text = source.read_text(encoding="utf-8")
    out = LocatedData(source=source, data=None)
    try:
        loader = yaml.SafeLoader(text)
        try:
            root = loader.get_single_node()
            if root is None:
                out.problems.append(f"{source}:1: the file is empty; expected a mapping")
                return out
            out.data = _convert(loader, root, (), out)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        out.problems.append(f"{source}:{line}: YAML syntax error: {exc.problem or exc}")
    return out


def _convert(loader: yaml.SafeLoader, node: yaml.Node, path: Path_, out: LocatedData) -> Any:
    out.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        result: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = _scalar(loader, key_node) if isinstance(key_node, yaml.ScalarNode) else None
            key_line = key_node.start_mark.line + 1
            if key is None or isinstance(key, (list, dict)):
                out.problems.append(f"{out.source}:{key_line}: a mapping key must be a plain string")
                continue
            if not isinstance(key, str):
                key = str(key)  # `1.5: x` would read as a float key; names are compared as text
            if key in result:
                out.problems.append(
                    f"{out.source}:{key_line}: duplicate key {key!r} (first defined on line {first_line[key]}); "
                    "remove one of them"
                )
                continue
            first_line[key] = key_line
            child = path + (key,)
            out.lines[child] = key_line
            result[key] = _convert(loader, value_node, child, out)
        return result
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            child = path + (i,)
            out.lines[child] = item.start_mark.line + 1
            items.append(_convert(loader, item, child, out))
        return items
    return _scalar(loader, node)
