from __future__ import annotations

from pathlib import Path

import pytest

from aiacc_build.paths import MATRIX_DIR, RELEASES_DIR


@pytest.fixture
def seed_text() -> str:
    return (RELEASES_DIR / "1.5.0.yaml").read_text(encoding="utf-8")


@pytest.fixture
def modern_text() -> str:
    return (RELEASES_DIR / "2.0.0.yaml").read_text(encoding="utf-8")


@pytest.fixture
def facts_copy(tmp_path: Path) -> Path:
    """A writable copy of matrix/facts for tests that break a facts file."""
    out = tmp_path / "facts"
    out.mkdir()
    for f in (MATRIX_DIR / "facts").glob("*.yaml"):
        (out / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    return out
