"""Where the repository's data lives. The tool runs from a checkout (editable install)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MATRIX_DIR = REPO_ROOT / "matrix"
RELEASES_DIR = MATRIX_DIR / "releases"
NATIVE_DIR = REPO_ROOT / "native"
DIST_DIR = REPO_ROOT / "dist"
# The build cache: cores, wheels, framework downloads, provisioned toolkits (override with --cache-dir).
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "aiacc-build"
