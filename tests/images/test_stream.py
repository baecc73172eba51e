"""Progress within seconds: the framework download (pip) and debootstrap run through run_streaming, whose lines
reach the status line as they come, not when the command ends."""

from __future__ import annotations

import time

import pytest

from aiacc_build.images.stream import run_streaming
from aiacc_build.images.wheelhouse import framework_wheelhouse

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_lines_reach_the_callback_while_the_command_still_runs():
    start = time.monotonic()
    seen: list[tuple[float, str]] = []
    result = run_streaming(["bash", "-c", "echo first; sleep 2; printf 'half\\rdone\\n'; echo oops >&2; exit 3"],
                           lambda line: seen.append((time.monotonic() - start, line)))
    took = time.monotonic() - start
    assert [line for _, line in seen] == ["first", "half", "done", "oops"]
    assert seen[0][0] < 1.5 <= 2 <= took  # the first line came two seconds before the end
    assert result.returncode == 3 and result.tail.endswith("oops")


def test_the_framework_download_reports_pips_lines(tmp_path):
    lines: list[str] = []
    folder = framework_wheelhouse(("--no-deps", "six==1.16.0"), "3.11", tmp_path, lines.append)
    assert (folder / "six-1.16.0-py2.py3-none-any.whl").is_file()
    assert any(line.startswith("Collecting six==1.16.0") for line in lines)
    assert any(line.startswith("Saved ") for line in lines)
    again: list[str] = []
    assert framework_wheelhouse(("--no-deps", "six==1.16.0"), "3.11", tmp_path, again.append) == folder
    assert again == []  # cached: nothing downloaded, nothing to show
