from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT / "src") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "src"))

import os  # noqa: E402

import pytest  # noqa: E402

from support import fast_tier  # noqa: E402

OPTIN = os.environ.get("AIACC_OPTIN") == "1"


def pytest_configure(config):
    """AIACC_FAST=1 (`bash dev/test.sh --fast`): only tests not marked `integration`, with process starts and socket
    binds refused (tests/support/fast_tier.py)."""
    if fast_tier.FAST:
        fast_tier.install_guards()


def pytest_collection_modifyitems(config, items):
    """`@pytest.mark.optin("why it is heavy")`: run only with AIACC_OPTIN=1 (the one opt-in switch)."""
    if fast_tier.FAST:
        kept = [item for item in items if item.get_closest_marker("integration") is None]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    if OPTIN:
        return
    for item in items:
        marker = item.get_closest_marker("optin")
        if marker is not None:
            why = marker.args[0] if marker.args else "a heavy run"
            item.add_marker(pytest.mark.skip(reason=f"opt-in (AIACC_OPTIN=1): {why}"))
