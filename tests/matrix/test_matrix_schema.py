"""The committed JSON schemas are generated from the pydantic models and describe the committed files."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from aiacc_build.cli import main
from aiacc_build.matrix.schema_export import render_schemas
from aiacc_build.paths import MATRIX_DIR


def test_committed_schemas_are_current():
    for path, text in render_schemas().items():
        assert path.is_file(), f"{path} missing: run `aiacc-build matrix schema --write`"
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `aiacc-build matrix schema --write`"


def test_schema_check_cli(capsys):
    assert main(["matrix", "schema", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("schema", "pattern"),
    [("schema.json", "releases/*.yaml"), ("facts.schema.json", "facts/[tm]*.yaml"), ("registry.schema.json", "facts/pypi.yaml")],
)
def test_committed_files_validate_against_their_schema(schema, pattern):
    spec = json.loads((MATRIX_DIR / schema).read_text())
    files = sorted(MATRIX_DIR.glob(pattern))
    assert files
    for f in files:
        jsonschema.validate(yaml.safe_load(f.read_text()), spec)


def test_schema_forbids_unknown_keys():
    spec = json.loads((MATRIX_DIR / "schema.json").read_text())
    data = yaml.safe_load((MATRIX_DIR / "releases" / "1.5.0.yaml").read_text())
    data["pythonz"] = ["3.6"]
    with pytest.raises(jsonschema.ValidationError, match="pythonz"):
        jsonschema.validate(data, spec)
