"""End to end (opt-in, AIACC_OPTIN=1: starts dockerd, debootstraps a base and builds the builder images
when missing, runs cibuildwheel in a container; tens of minutes): `aiacc-build ci run-local` runs the
rendered 2.0.0 workflow's jobs for the local cell to green; the perseus-common it builds is the
release's version and the install-check job installs from the index job's mirror. Prints the figures (-s)."""

from __future__ import annotations

import json
import zipfile

import pytest

from aiacc_build.cli import main
from aiacc_build.matrix import load_release

pytestmark = pytest.mark.optin("runs the CI workflow in containers")

LOCAL_JOB = "torch-2_13_0-cpu-x86_64"


def test_the_workflow_runs_here_for_the_local_cell(tmp_path, capsys):
    release = load_release("2.0.0").info
    assert main(["render", "--release", "2.0.0"]) == 0
    capsys.readouterr()
    code = main(["ci", "run-local", "--release", "2.0.0", "--work-dir", str(tmp_path / "run"), "--json"])
    report = json.loads(capsys.readouterr().out)
    jobs = {j["id"]: j for j in report["jobs"]}
    for job in report["jobs"]:
        print(f"{job['status']:12} {job['id']} {job['seconds']:.0f}s {job['reason']}")
        for step in job["steps"]:
            print(f"    {step['status']:7} {step['seconds']:6.1f}s {step['label']}")
    assert code == 0, {j: r["reason"] for j, r in jobs.items() if r["status"] == "failed"}
    assert "not the manylinux glibc floor" in report["note"]
    for job_id in ("perseus-common", LOCAL_JOB, "index", "install-check"):
        assert jobs[job_id]["status"] == "passed", jobs[job_id]
    # the perseus-common the workflow builds is the release's
    mirror = tmp_path / "run" / "artifacts" / f"mirror-{release.version}"
    common = mirror / f"perseus_common-{release.version}-py3-none-any.whl"
    with zipfile.ZipFile(common) as wheel:
        assert f'__version__ = "{release.version}"' in wheel.read("perseus/_version.py").decode()
    manifest = json.loads((mirror / "manifest.json").read_text())
    assert manifest["release"] == release.version
    # the install-check job installed from the index job's mirror: its log names the mirror's files
    log = (tmp_path / "run" / "logs" / "install-check.log").read_text()
    assert "mirror/" in log and "perseus_torch-2.0.0+2.13.0-cp311" in log
    assert (tmp_path / "run" / "jobs" / "install-check" / "ws" / "mirror" / "manifest.json").is_file()
