"""The fast tier (AIACC_FAST=1, `bash dev/test.sh --fast`) leaves out `integration` tests and fails a test that
starts a process or binds a socket without that mark."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # runs pytest in a subprocess

TESTS = Path(__file__).resolve().parent


def _fast_run(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    case = TESTS / "_fast_tier_probe_{}_test.py".format(os.getpid())  # under tests/: its conftest installs the guard
    case.write_text(body)
    try:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(case)],
                              env=dict(os.environ, AIACC_FAST="1"), cwd=str(TESTS.parent), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    finally:
        case.unlink()


def test_an_unmarked_process_start_or_bind_fails_with_the_fix(tmp_path):
    proc = _fast_run(tmp_path, "import socket, subprocess\n\n"
                               "def test_spawns():\n    subprocess.run(['true'])\n\n"
                               "def test_binds():\n    socket.socket().bind(('127.0.0.1', 0))\n\n"
                               "def test_pure():\n    assert sum([1, 2]) == 3\n")
    assert proc.returncode == 1, proc.stdout
    assert "2 failed, 1 passed" in proc.stdout
    assert "a process start (subprocess) in the fast tier" in proc.stdout
    assert "a socket bind in the fast tier" in proc.stdout
    assert "pytestmark = pytest.mark.integration" in proc.stdout


def test_marked_modules_are_left_out(tmp_path):
    proc = _fast_run(tmp_path, "import subprocess, pytest\n\npytestmark = pytest.mark.integration\n\n"
                               "def test_spawns():\n    subprocess.run(['true'])\n")
    assert proc.returncode == 5, proc.stdout  # nothing left to run
    assert "1 deselected" in proc.stdout
