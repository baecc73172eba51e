"""Golden snapshots of every rendered file kind, from the two small sample releases.

Update after an intended change with `AIACC_UPDATE_GOLDEN=1 bash dev/test.sh tests/render/test_golden.py`
and review the diff of tests/render/golden/.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiacc_build.render import KINDS, render_release

from .sample_releases import FIXED_HOST, MODERN, SEED, modern_cells, seed_cells
from .test_support import recorded

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("AIACC_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize(
    "release, cells, record", [(SEED, seed_cells(), None), (MODERN, modern_cells(), recorded())], ids=["1.5.0", "2.0.0"]
)
def test_golden(release, cells, record):
    """1.5.0 without a build record (nothing built yet), 2.0.0 with a recorded one."""
    files = render_release(release, cells, FIXED_HOST, record)
    assert {f.kind for f in files} == set(KINDS)
    folder = GOLDEN / release.version
    if UPDATE:
        for old in folder.rglob("*"):
            if old.is_file():
                old.unlink()
        for f in files:
            (folder / f.path).parent.mkdir(parents=True, exist_ok=True)
            (folder / f.path).write_text(f.content, encoding="utf-8")
    expected = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert expected == {f.path for f in files}, "files added or removed: run with AIACC_UPDATE_GOLDEN=1 and review"
    for f in files:
        golden = (folder / f.path).read_text(encoding="utf-8")
        assert f.content == golden, f"{f.path} differs from its golden file: run with AIACC_UPDATE_GOLDEN=1 and review the diff"
