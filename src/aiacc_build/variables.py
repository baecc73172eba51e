"""The PERSEUS_* variables' generated references: the C header the native code reads them through and
the reference page, both made from their one declaration in perseus-common (native/runtime/perseus/config.py).

The declaration module is standard-library only, so it is loaded from its file: the tool needs no
installed perseus-common to generate or check these.
"""

from __future__ import annotations

import enum
import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from .paths import NATIVE_DIR, REPO_ROOT

DECLARATION = NATIVE_DIR / "runtime" / "perseus" / "config.py"
C_HEADER = NATIVE_DIR / "core" / "include" / "perseus" / "variables.h"
REFERENCE_PAGE = REPO_ROOT / "docs" / "variables.md"
FRAMEWORK_COLUMNS = ("torch", "tensorflow", "mxnet", "caffe")


@lru_cache(maxsize=1)
def declaration() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_perseus_config_declaration", DECLARATION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module of their fields through sys.modules
    spec.loader.exec_module(module)
    return module


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


def render_c_header() -> str:
    lines = [
        "// The PERSEUS_* variables, generated from their one declaration (native/runtime/perseus/config.py)",
        "// by `aiacc-build variables --write`: do not edit. Native code reads a variable by its",
        "// PERSEUS_ENV_* name; its default when unset is PERSEUS_DEFAULT_* (none: an automatic choice).",
        "#ifndef PERSEUS_VARIABLES_H_",
        "#define PERSEUS_VARIABLES_H_",
        "",
    ]
    for spec in declaration().VARIABLES:
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
    pairs = [(macro_suffix(spec.name), macro_suffix(alias)) for spec in declaration().VARIABLES for alias in spec.aliases]
    lines.append("/* Every alias of a variable, X(PERSEUS_ENV_<name>, PERSEUS_ENV_ALIAS_<alias>). */")
    lines.append("#define PERSEUS_ENV_ALIASES(X)" + (" \\" if pairs else ""))
    for i, (name, alias) in enumerate(pairs):
        end = " \\" if i < len(pairs) - 1 else ""
        lines.append(f"  X(PERSEUS_ENV_{name}, PERSEUS_ENV_ALIAS_{alias}){end}")
    lines.append("")
    lines.append("#endif  // PERSEUS_VARIABLES_H_")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_reference_page() -> str:
    config = declaration()
    lines = [
        "# PERSEUS_* variables",
        "",
        "Generated from their one declaration (`native/runtime/perseus/config.py`) by",
        "`aiacc-build variables --write`: do not edit. `perseus doctor` shows the value of each in effect and",
        "where it comes from; an invalid value stops a job before it starts (perseusrun) or when the runtime",
        "first reads it, with the variable, the value and what is allowed; an unknown `PERSEUS_*` name is",
        "reported (by `import perseus`, perseusrun and doctor) with the closest known one. An empty value means unset.",
        "",
        "| variable | default | allowed | effect | since | " + " | ".join(FRAMEWORK_COLUMNS) + " |",
        "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in FRAMEWORK_COLUMNS) + " |",
    ]
    for spec in config.VARIABLES:
        honoured = ["yes" if fw in spec.honoured_by else "n/a" for fw in FRAMEWORK_COLUMNS]
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
