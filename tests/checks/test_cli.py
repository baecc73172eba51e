"""`aiacc-build check conda|ci`: JSON reports, exit codes, clear errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from aiacc_build.checks.findings import ChecksFailedError

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "aiacc_build.cli", *args], capture_output=True, text=True)


def test_check_conda_renders_and_passes_with_json():
    out = cli("check", "conda", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] and report["check"] == "conda" and report["checked"]["releases"] == 2 and report["findings"] == []


def test_check_conda_on_a_broken_dist_exits_8_naming_file_package_rule(dist_copy):
    target = dist_copy / "2.0.0" / "conda" / "latest" / "tensorflow_2.21.0_cpu_py311.yaml"
    target.write_text(target.read_text().replace('"pip"\n', '"pip"\n  - "tensorflow=2.21.0"\n', 1))
    out = cli("check", "conda", "--dist", str(dist_copy), "--release", "2.0.0", "--json")
    assert out.returncode == ChecksFailedError.exit_code
    (finding,) = json.loads(out.stdout)["findings"]
    assert finding == {
        "file": "2.0.0/conda/latest/tensorflow_2.21.0_cpu_py311.yaml",
        "rule": "pip-only",
        "subject": "tensorflow",
        "message": finding["message"],
        "severity": "error",
    }
    human = cli("check", "conda", "--dist", str(dist_copy), "--release", "2.0.0")
    assert human.returncode == 8 and "[pip-only] tensorflow" in human.stdout and "1 rule(s) broken" in human.stderr


def test_check_without_the_rendered_release_says_what_to_run(tmp_path):
    out = cli("check", "ci", "--dist", str(tmp_path), "--release", "1.5.0", "--no-cibuildwheel")
    assert out.returncode == 2 and "aiacc-build render --out" in out.stderr


def test_check_ci_json(rendered_dist):
    out = cli("check", "ci", "--dist", str(rendered_dist), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] and report["checked"]["identifiers"] > 0 and report["errors"] == 0


def test_help_lists_both_checks():
    out = cli("check", "--help")
    assert out.returncode == 0 and "conda" in out.stdout and "ci" in out.stdout
