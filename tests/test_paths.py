"""$AIACC_MATRIX_DIR points every command at another matrix folder; one that is no matrix is named."""

from __future__ import annotations

import pytest

from aiacc_build.errors import ConfigurationError
from aiacc_build.paths import MATRIX_DIR, MATRIX_ENV, facts_dir, matrix_dir, releases_dir


def test_the_checkouts_matrix_by_default(monkeypatch):
    monkeypatch.delenv(MATRIX_ENV, raising=False)
    assert (matrix_dir(), releases_dir(), facts_dir()) == (MATRIX_DIR, MATRIX_DIR / "releases", MATRIX_DIR / "facts")


def test_another_matrix_folder(tmp_path, monkeypatch):
    (tmp_path / "releases").mkdir()
    (tmp_path / "facts").mkdir()
    monkeypatch.setenv(MATRIX_ENV, str(tmp_path))
    assert releases_dir() == tmp_path / "releases" and facts_dir() == tmp_path / "facts"


def test_a_folder_that_is_no_matrix_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv(MATRIX_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(ConfigurationError, match=f"{MATRIX_ENV}=.*nowhere is not a matrix folder"):
        matrix_dir()
