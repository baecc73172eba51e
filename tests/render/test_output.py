from __future__ import annotations

import os

import pytest

from aiacc_build.render import render_release_to
from aiacc_build.render.output import MANIFEST_NAME, RenderedFile, write_files

from .sample_releases import FIXED_HOST, MODERN, modern_cells


def _snapshot(folder):
    return {p: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode) for p in folder.rglob("*") if p.is_file()}


def test_second_render_changes_no_byte_and_writes_nothing(tmp_path):
    first = render_release_to(MODERN, modern_cells(), tmp_path / "2.0.0", FIXED_HOST)
    assert first.report.written and not first.report.unchanged
    before = _snapshot(tmp_path)
    second = render_release_to(MODERN, modern_cells(), tmp_path / "2.0.0", FIXED_HOST)
    assert second.report.written == [] and second.report.removed == []
    assert _snapshot(tmp_path) == before  # same bytes, not even rewritten (same mtimes)


def test_only_changed_files_are_written_and_stale_ones_removed(tmp_path):
    out = tmp_path / "out"
    cells = modern_cells()
    render_release_to(MODERN, cells, out, FIXED_HOST)
    mine = out / "user-notes.txt"
    mine.write_text("not the renderer's")
    dropped = [c for c in cells if c.framework.value != "mxnet"]
    result = render_release_to(MODERN, dropped, out, FIXED_HOST)
    assert "conda/latest/mxnet_1.9.1_cpu_py39.yaml" in result.report.removed
    assert not (out / "conda/latest/mxnet_1.9.1_cpu_py39.yaml").exists()
    assert mine.read_text() == "not the renderer's"  # never the renderer's to remove
    assert set(result.report.written) <= {
        "docker/README.md", "docker-bake.json", "ci/build-wheels-2.0.0.yml", "install_AIACC-Training.sh", "SUPPORT.md", "support.json",
    }


def test_install_script_is_executable_and_modes_are_restored(tmp_path):
    render_release_to(MODERN, modern_cells(), tmp_path, FIXED_HOST)
    script = tmp_path / "install_AIACC-Training.sh"
    assert os.access(script, os.X_OK)
    script.chmod(0o644)
    result = render_release_to(MODERN, modern_cells(), tmp_path, FIXED_HOST)
    assert result.report.written == ["install_AIACC-Training.sh"] and os.access(script, os.X_OK)


def test_duplicate_paths_are_refused_before_anything_is_written(tmp_path):
    files = [RenderedFile("a.txt", "1", "support"), RenderedFile("a.txt", "2", "support")]
    with pytest.raises(ValueError, match="share a path: a.txt"):
        write_files(tmp_path, files)
    assert not (tmp_path / "a.txt").exists()


def test_manifest_lists_the_rendered_files(tmp_path):
    render_release_to(MODERN, modern_cells(), tmp_path, FIXED_HOST)
    listed = (tmp_path / MANIFEST_NAME).read_text().splitlines()
    assert listed == sorted(listed) and "docker-bake.json" in listed and MANIFEST_NAME not in listed
