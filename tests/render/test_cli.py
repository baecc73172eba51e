from __future__ import annotations

import json

import pytest

from aiacc_build.cli import main

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def _json_run(capsys, *args: str) -> dict:
    assert main(["render", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_render_every_release_then_a_no_op(tmp_path, capsys, real_releases):
    first = _json_run(capsys, "--out", str(tmp_path))
    assert [r["release"] for r in first["releases"]] == [r.info.version for r in real_releases]
    for entry, release in zip(first["releases"], real_releases):
        assert entry["cells"] == len(release.cells)
        assert set(entry["files"]) == {"conda", "docker", "ci", "install-script", "support"}
        assert len(entry["written"]) == sum(entry["files"].values())
    again = _json_run(capsys, "--out", str(tmp_path))
    assert all(r["written"] == [] and r["removed"] == [] for r in again["releases"])


def test_one_release_by_version_and_status_lines(tmp_path, capsys):
    assert main(["render", "--release", "1.5.0", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1.5.0" in out and "conda" in out and "written" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1.5.0"]


def test_unknown_release_is_an_error_and_writes_nothing(tmp_path, capsys):
    assert main(["render", "--release", "9.9.9", "--out", str(tmp_path / "out")]) == 4
    assert "no release '9.9.9'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_same_release_twice_is_refused(tmp_path, capsys):
    assert main(["render", "--release", "1.5.0", "--release", "1.5.0", "--out", str(tmp_path)]) == 2
    assert "selected twice" in capsys.readouterr().err


def test_out_that_is_a_file_is_a_clear_error(tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("mine")
    assert main(["render", "--release", "1.5.0", "--out", str(target)]) == 2  # click refuses it
    assert "is a file" in capsys.readouterr().err
    assert main(["render", "--release", "1.5.0", "--out", str(target / "sub")]) == 2
    assert "cannot write into" in capsys.readouterr().err
    assert target.read_text() == "mine"
