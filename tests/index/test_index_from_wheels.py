"""`aiacc-build index --from-wheels`: the CI index job's path, wheels downloaded into dist/<release>/
without a build record (here: the local build's wheels copied into a fresh dist/)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aiacc_build import naming
from aiacc_build.errors import BuildError
from aiacc_build.index.collect import NOT_IN_MIRROR
from aiacc_build.index.mirror import build_index

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def _copy_wheels(local_build, dist):
    root = dist / "2.0.0"
    for wheel in local_build.root.rglob("*.whl"):
        target = root / wheel.relative_to(local_build.root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheel, target)
    return root


def test_wheels_without_a_record_make_the_same_mirror(local_build, tmp_path):
    root = _copy_wheels(local_build, tmp_path)
    result = build_index("2.0.0", tmp_path, from_wheels=True)
    recorded = json.loads((local_build.root / "manifest.json").read_text())
    found = json.loads((root / "manifest.json").read_text())
    assert [c["path"] for c in found["cells"]] == [c["path"] for c in recorded["cells"]]
    built = {c["path"]: (c["sha256"], c["size"]) for c in found["cells"] if c["status"] == "built"}
    assert built == {c["path"]: (c["sha256"], c["size"]) for c in recorded["cells"] if c["status"] == "built"}
    assert {c["reason"] for c in found["cells"] if c["status"] != "built"} == {NOT_IN_MIRROR}
    assert found["common"]["sha256"] == recorded["common"]["sha256"] and found["common"]["fingerprint"] is None
    assert (root / naming.CHECKSUMS_FILENAME).is_file() and result.stale == ()
    assert (root / "cpu" / "simple" / "perseus-torch" / "index.html").is_file()


def test_cli_and_a_mirror_without_perseus_common(local_build, tmp_path):
    _copy_wheels(local_build, tmp_path)
    done = subprocess.run([str(Path(sys.executable).parent / "aiacc-build"), "index", "--release", "2.0.0", "--dist", str(tmp_path),
                           "--from-wheels", "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["built"] == len(local_build.report.results) == 3  # torch, TensorFlow, MXNet
    for common in (tmp_path / "2.0.0").glob("perseus_common-*.whl"):
        common.unlink()
    with pytest.raises(BuildError, match="every mirror holds perseus-common 2.0.0"):
        build_index("2.0.0", tmp_path, from_wheels=True)
