"""Where the repository's data lives. The tool runs from a checkout (editable install)."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigurationError

REPO_ROOT = Path(__file__).resolve().parents[2]
MATRIX_DIR = REPO_ROOT / "matrix"  # the checkout's matrix
RELEASES_DIR = MATRIX_DIR / "releases"
NATIVE_DIR = REPO_ROOT / "native"
DIST_DIR = REPO_ROOT / "dist"
# The build cache: cores, wheels, framework downloads, provisioned toolkits (override with --cache-dir).
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "aiacc-build"
# Another matrix folder (a copy with a new CUDA version, a framework, a release) that every command reads instead.
MATRIX_ENV = "AIACC_MATRIX_DIR"


def matrix_dir() -> Path:
    """The matrix every command reads: $AIACC_MATRIX_DIR, else the checkout's matrix/. Read at each call,
    so that releases, facts, base images, the conda table and the CUDA-driver facts all come from one folder."""
    override = os.environ.get(MATRIX_ENV)
    if not override:
        return MATRIX_DIR
    folder = Path(override)
    if not (folder / "releases").is_dir() or not (folder / "facts").is_dir():
        raise ConfigurationError(f"${MATRIX_ENV}={override} is not a matrix folder (it needs releases/ and facts/)")
    return folder


def releases_dir() -> Path:
    return matrix_dir() / "releases"


def facts_dir() -> Path:
    return matrix_dir() / "facts"
