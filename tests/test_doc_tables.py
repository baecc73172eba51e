"""The generated tables of README.md and docs/*.md are current (AIACC_UPDATE_GOLDEN=1 rewrites them)."""

from __future__ import annotations

import os
import re

import pytest

from aiacc_build.doc_tables import DOCUMENTS, GENERATORS, blocks, refresh
from aiacc_build.paths import REPO_ROOT


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_generated_tables_are_current(path):
    text = path.read_text()
    current = refresh(text, str(path))
    if current != text and os.environ.get("AIACC_UPDATE_GOLDEN") == "1":
        path.write_text(current)
        return
    assert current == text, f"{path.relative_to(REPO_ROOT)} has stale generated tables: run AIACC_UPDATE_GOLDEN=1 " \
        ".venv/bin/python -m pytest tests/test_doc_tables.py"


def test_every_table_is_published_where_readers_look():
    assert "commands" in blocks(REPO_ROOT / "README.md")
    assert "installer-exit-codes" in blocks(REPO_ROOT / "docs" / "installer.md")
    assert "tool-exit-codes" in blocks(REPO_ROOT / "docs" / "commands.md")
    found = {name for path in DOCUMENTS for name in blocks(path)}
    assert found == set(GENERATORS), f"generated tables nowhere: {set(GENERATORS) - found}"


def test_an_unknown_block_is_refused():
    with pytest.raises(ValueError, match="unknown generated block 'nope'"):
        refresh("<!-- generated: nope -->\nx\n<!-- end generated -->\n", "here.md")


def test_the_command_table_names_every_command():
    table = GENERATORS["commands"]()
    for name in ("build", "index", "serve", "render", "matrix", "toolkit", "images", "check", "frameworks", "variables"):
        assert f"| `aiacc-build {name}` |" in table


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO_ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| tests (what CI runs"))
    command = row.rsplit("|", 2)[1].strip().strip("`")
    ci = [line for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [command]


def test_readme_is_an_index():
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    assert 150 <= len(lines) <= 200, f"README.md has {len(lines)} lines: it is an index, the manual lives in docs/"


@pytest.mark.parametrize("path", [*DOCUMENTS, REPO_ROOT / "bench" / "RESULTS.md"], ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_relative_links_resolve(path):
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text()):
        assert (path.parent / target).exists(), f"{path.relative_to(REPO_ROOT)} links to {target}, which does not exist"
