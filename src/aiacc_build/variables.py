"""The PERSEUS_* variables' generated references: the C header the native code reads them through and
the reference page, both made from their one declaration in perseus-common (native/runtime/perseus/config.py).

The declaration module is standard-library only, so it is loaded from its folder: the tool needs no
installed perseus-common to generate or check these. The page's framework columns are the declaration's
`RUNTIMES` (the adapters' frameworks, through the generated perseus/_frameworks.py, and Caffe's library).
"""

from __future__ import annotations

import enum
import importlib
import sys
import types
from functools import lru_cache
from pathlib import Path
from typing import Any

from .hashing import bytes_sha256
from .paths import NATIVE_DIR, REPO_ROOT

PERSEUS_SOURCE = NATIVE_DIR / "runtime" / "perseus"
C_HEADER = NATIVE_DIR / "core" / "include" / "perseus" / "variables.h"
REFERENCE_PAGE = REPO_ROOT / "docs" / "variables.md"


@lru_cache(maxsize=None)
def declaration(source: Path = PERSEUS_SOURCE) -> types.ModuleType:
    """perseus.config of a perseus source folder, imported as a submodule of a private package over that
    folder (its __init__ is not run), so its relative import finds that folder's _frameworks.py."""
    package = "_perseus_source_" + bytes_sha256(str(source).encode())[:12]
    module = types.ModuleType(package)
    module.__path__ = [str(source)]
    sys.modules[package] = module
    return importlib.import_module(f"{package}.config")


def framework_columns(source: Path = PERSEUS_SOURCE) -> tuple[str, ...]:
    """What a variable can be honoured by: the page's columns, in order."""
    return tuple(declaration(source).RUNTIMES)


def macro_suffix(name: str) -> str:
    """`PERSEUS_ALLREDUCE_DTYPE` -> `ALLREDUCE_DTYPE`; other names keep theirs (`GLOO_TIMEOUT_SECONDS`)."""
    return name.removeprefix("PERSEUS_")


def c_literal(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, enum.IntEnum):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def render_c_header(source: Path = PERSEUS_SOURCE) -> str:
    lines = [
        "// The PERSEUS_* variables, generated from their one declaration (native/runtime/perseus/config.py)",
        "// by `aiacc-build variables --write`: do not edit. Native code reads a variable by its",
        "// PERSEUS_ENV_* name; its default when unset is PERSEUS_DEFAULT_* (none: an automatic choice).",
        "#ifndef PERSEUS_VARIABLES_H_",
        "#define PERSEUS_VARIABLES_H_",
        "",
    ]
    for spec in declaration(source).VARIABLES:
        suffix = macro_suffix(spec.name)
        lines.append(f"/* {spec.name}: {spec.effect}. Allowed: {spec.allowed}. Since {spec.since}. */")
        lines.append(f'#define PERSEUS_ENV_{suffix} "{spec.name}"')
        for alias in spec.aliases:
            lines.append(f'#define PERSEUS_ENV_ALIAS_{macro_suffix(alias)} "{alias}"')
        literal = c_literal(spec.default)
        if literal is not None:
            lines.append(f"#define PERSEUS_DEFAULT_{suffix} {literal}")
        for bound in ("minimum", "maximum"):
            value = getattr(spec.parse, bound, None)
            if value is not None:
                lines.append(f"#define PERSEUS_{bound[:3].upper()}_{suffix} {value}")
        accepts = getattr(spec.parse, "accepts", None)
        if accepts is not None:  # what a native parser's error says the variable accepts
            lines.append(f"#define PERSEUS_ACCEPTS_{suffix} {c_literal(accepts)}")
        lines.append("")
    # Every alias as X(declared name, alias): the native option parsers read each variable under its aliases
    # too (the engine's setting()), so a spelling perseus.config accepts works in every consumer.
    pairs = [(macro_suffix(spec.name), macro_suffix(alias)) for spec in declaration(source).VARIABLES for alias in spec.aliases]
    lines.append("/* Every alias of a variable, X(PERSEUS_ENV_<name>, PERSEUS_ENV_ALIAS_<alias>). */")
    lines.append("#define PERSEUS_ENV_ALIASES(X)" + (" \\" if pairs else ""))
    for i, (name, alias) in enumerate(pairs):
        end = " \\" if i < len(pairs) - 1 else ""
        lines.append(f"  X(PERSEUS_ENV_{name}, PERSEUS_ENV_ALIAS_{alias}){end}")
    lines.append("")
    lines += render_engine_options(source)
    lines.append("#endif  // PERSEUS_VARIABLES_H_")
    return "\n".join(lines) + "\n"


INT_MAX_LITERAL = "2147483647"
AUTOMATIC_INT = "-1"  # an engine int option declared without a default: the engine's automatic choice


def _x_macro(name: str, comment: str, rows: list[str]) -> list[str]:
    lines = [f"/* {comment} */", f"#define {name}(X)" + (" \\" if rows else "")]
    lines += [f"  X({row})" + (" \\" if i < len(rows) - 1 else "") for i, row in enumerate(rows)]
    return lines + [""]


def render_engine_options(source: Path = PERSEUS_SOURCE) -> list[str]:
    """The engine options the declaration names (`engine=`), one X-macro table per C type: the engine's options
    struct, its defaults, its environment parser and its set/get by name all expand these."""
    rows: dict[str, list[str]] = {"int": [], "real": [], "text": []}
    for spec in declaration(source).VARIABLES:
        if not spec.engine:
            continue
        kind = getattr(spec.parse, "kind", None)
        accepts = c_literal(getattr(spec.parse, "accepts", None) or spec.allowed)
        if kind == "int":
            unset = c_literal(spec.default) if spec.default is not None else AUTOMATIC_INT
            high = spec.parse.maximum
            rows["int"].append(f'{spec.engine}, "{spec.name}", {unset}, {spec.parse.minimum}, '
                               f'{INT_MAX_LITERAL if high is None else high}, {accepts}')
        elif kind == "real":
            unset = c_literal(float(spec.default))
            high = "HUGE_VAL" if spec.parse.maximum is None else c_literal(float(spec.parse.maximum))
            rows["real"].append(f'{spec.engine}, "{spec.name}", {unset}, {c_literal(float(spec.parse.minimum))}, '
                                f'{int(spec.parse.minimum_inclusive)}, {high}, {accepts}')
        elif kind == "text" and not hasattr(spec.parse, "minimum") and getattr(spec.parse, "accepts", None) is None:
            rows["text"].append(f'{spec.engine}, "{spec.name}", {accepts}')
        else:
            raise ValueError(f"{spec.name}: not supported as an engine option (engine={spec.engine!r}): the engine "
                             f"holds integers, numbers and free text, not a parser of kind {kind!r} with fixed words")
    lines = [
        "/* The native engine's options that variables set (`engine=` in their declaration). The engine's options",
        " * struct has one field per row; perseus_engine_options_from_env() reads each variable (and its aliases),",
        " * perseus_engine_options_set() takes the field or the variable by name, with the same rule and message.",
        " * Unset: the declared default, else the engine's automatic choice (-1; \"\" for text). */",
        "#define PERSEUS_ENGINE_TEXT_CAPACITY 256",
        "",
    ]
    lines += _x_macro("PERSEUS_ENGINE_INT_OPTIONS", "X(field, variable, unset, minimum, maximum, accepts)", rows["int"])
    lines += _x_macro("PERSEUS_ENGINE_REAL_OPTIONS",
                      "X(field, variable, unset, minimum, minimum_inclusive, maximum, accepts)", rows["real"])
    lines += _x_macro("PERSEUS_ENGINE_TEXT_OPTIONS", "X(field, variable, accepts): free text, unset \"\"", rows["text"])
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_reference_page(source: Path = PERSEUS_SOURCE) -> str:
    config = declaration(source)
    columns = framework_columns(source)
    lines = [
        "# PERSEUS_* variables",
        "",
        "Generated from their one declaration (`native/runtime/perseus/config.py`) by",
        "`aiacc-build variables --write`: do not edit. `perseus doctor` shows the value of each in effect and",
        "where it comes from; an invalid value stops a job before it starts (perseusrun) or when the runtime",
        "first reads it, with the variable, the value and what is allowed; an unknown `PERSEUS_*` name is",
        "reported (by `import perseus`, perseusrun and doctor) with the closest known one. An empty value means unset.",
        "",
        "| variable | default | allowed | effect | since | " + " | ".join(columns) + " |",
        "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in columns) + " |",
    ]
    for spec in config.VARIABLES:
        honoured = ["yes" if fw in spec.honoured_by else "n/a" for fw in columns]
        aliases = f" (also read as `{'`, `'.join(spec.aliases)}`)" if spec.aliases else ""
        lines.append(
            f"| `{spec.name}`{aliases} | `{config.show(spec.default)}` | {_cell(spec.allowed)} | {_cell(spec.effect)} "
            f"| {spec.since} | " + " | ".join(honoured) + " |"
        )
    lines += [
        "",
        "\"n/a\": that framework's runtime does not honour the variable (yet); setting it there warns once,",
        "saying why. Variables no framework honours are accepted for compatibility with the manual's scripts.",
    ]
    return "\n".join(lines) + "\n"


GENERATED = {C_HEADER: render_c_header, REFERENCE_PAGE: render_reference_page}


def stale() -> list[Path]:
    return [path for path, render in GENERATED.items() if not path.is_file() or path.read_text(encoding="utf-8") != render()]


def write() -> list[Path]:
    written = []
    for path in stale():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(GENERATED[path](), encoding="utf-8")
        written.append(path)
    return written
