"""Reading one matrix file into its pydantic model, with file:line in every problem."""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import MatrixError
from .located_yaml import LocatedData, load_located

M = TypeVar("M", bound=BaseModel)


def read_model(path: Path, model: type[M], text: str | None = None) -> tuple[M, LocatedData]:
    """Parse and validate `path`; raise MatrixError listing every problem as `file:line: message`."""
    path = Path(path)
    if text is None and not path.is_file():
        raise MatrixError([f"{path}:1: no such file"])
    loc = load_located(path, text)
    problems = list(loc.problems)
    if not problems and not isinstance(loc.data, dict):
        problems.append(f"{path}:1: expected a mapping at the top of the file")
    if problems:
        raise MatrixError(problems)
    try:
        return model.model_validate(loc.data), loc
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # A value that fails a union (`"1.7.x"` is neither a valid version nor a mapping) yields one
        # error per branch; the "wrong type" branches only add noise next to the real one.
        by_path: dict[tuple, list[dict[str, Any]]] = {}
        for err in errors:
            by_path.setdefault(_data_path(err["loc"], loc.data), []).append(err)
        kept = []
        for errs in by_path.values():
            specific = [e for e in errs if e["type"] not in _TYPE_MISMATCH]
            kept.extend(specific or errs[:1])
        messages = [_describe(err, loc, model) for err in kept]
        raise MatrixError(sorted(dict.fromkeys(messages), key=_line_key)) from None


_TYPE_MISMATCH = {"model_type", "dict_type", "list_type", "string_type", "literal_error", "model_attributes_type"}


def _line_key(message: str) -> tuple[str, int]:
    path, _, rest = message.partition(".yaml:")
    line = rest.split(":", 1)[0]
    return (path, int(line) if line.isdigit() else 0)


def _describe(err: dict[str, Any], loc: LocatedData, model: type[BaseModel]) -> str:
    path = _data_path(err["loc"], loc.data)
    dotted = ".".join(str(p) for p in path) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(path[-1])
        allowed = _allowed_keys(model, path[:-1], loc.data)
        parent = ".".join(str(p) for p in path[:-1]) or "the top level"
        hint = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        fix = f"did you mean {hint[0]!r}?" if hint else f"allowed keys: {', '.join(sorted(allowed))}"
        return f"{loc.where(path)}: unknown key {key!r} in {parent}; {fix}"
    if kind == "missing":
        parent_path = path[:-1]
        return f"{loc.where(parent_path)}: missing required key {str(path[-1])!r} in {'.'.join(map(str, parent_path)) or 'the top level'}"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    value = err.get("input")
    shown = f" (got {value!r})" if isinstance(value, (str, int, float, bool)) and kind != "value_error" else ""
    return f"{loc.where(path)}: {dotted}: {msg}{shown}"


def _data_path(err_loc: tuple[Any, ...], data: Any) -> tuple[Any, ...]:
    """Drop pydantic's union-branch labels ('str', 'SupportEntry', ...) that are not in the data."""
    out: list[Any] = []
    node = data
    for part in err_loc:
        if isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            out.append(part)
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and part.endswith("[key]"):
            continue
        elif isinstance(node, (dict, list)):
            # a key that is missing or not allowed: keep it as the last element
            if not isinstance(part, str) or not _is_branch_label(part):
                out.append(part)
                node = None
        # scalars: branch labels below them add nothing
    return tuple(out)


def _is_branch_label(part: str) -> bool:
    return part[:1].isupper() or part in {"str", "list[str]", "none", "literal['pypi']", "function-after[_check_version(), str]"} or part.startswith(("function-", "literal[", "list["))


def _allowed_keys(model: type[BaseModel], path: tuple[Any, ...], data: Any) -> list[str]:
    """Field names of the model(s) found at `path` (walks fields, dict values, list items, unions)."""
    candidates: list[Any] = [model]
    for part in path:
        nxt: list[Any] = []
        for c in candidates:
            for t in _expand(c):
                if isinstance(t, type) and issubclass(t, BaseModel) and isinstance(part, str) and part in t.model_fields:
                    nxt.append(t.model_fields[part].annotation)
                origin = typing.get_origin(t)
                if origin is dict:
                    nxt.append(typing.get_args(t)[1])
                elif origin is list and isinstance(part, int):
                    nxt.append(typing.get_args(t)[0])
        candidates = nxt
    keys: set[str] = set()
    for c in candidates:
        for t in _expand(c):
            if isinstance(t, type) and issubclass(t, BaseModel):
                keys.update(t.model_fields)
    return sorted(keys)


def _expand(t: Any) -> list[Any]:
    """Unwrap Optional / Union / Annotated into their member types."""
    origin = typing.get_origin(t)
    if origin is typing.Annotated:
        return _expand(typing.get_args(t)[0])
    if origin in (typing.Union, types.UnionType):
        out: list[Any] = []
        for a in typing.get_args(t):
            out.extend(_expand(a))
        return out
    return [t]
