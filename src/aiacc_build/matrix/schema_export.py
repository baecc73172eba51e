"""The JSON schemas of the matrix files, generated from the pydantic models (committed, checked by a test)."""

from __future__ import annotations

import json
from pathlib import Path

from ..paths import matrix_dir
from .schema import FactsFile, RegistryFile, ReleaseFile

SCHEMAS = {
    "schema.json": (ReleaseFile, "AIACC-Training release matrix (matrix/releases/<version>.yaml)"),
    "facts.schema.json": (FactsFile, "Upstream framework facts (matrix/facts/<framework>.yaml)"),
    "registry.schema.json": (RegistryFile, "Registry facts written by `aiacc-build matrix sync` (matrix/facts/pypi.yaml)"),
}


def render_schemas(folder: Path | None = None) -> dict[Path, str]:
    """Schema file (in `folder`, default: the matrix in use) -> its text."""
    folder = folder or matrix_dir()
    out = {}
    for name, (model, title) in SCHEMAS.items():
        schema = model.model_json_schema()
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title, **{k: v for k, v in schema.items() if k != "title"}}
        out[folder / name] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return out
