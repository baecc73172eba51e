"""perseus-common must import and detect on Python 3.6 (the 1.5.0 release ships py36 cells)."""

import glob
import json
import os
import subprocess
from pathlib import Path

import pytest

from launch_helpers import BASE_ENV, run_detect

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

RUNTIME = Path(__file__).resolve().parents[2] / "native" / "runtime"
PY36 = sorted(glob.glob("/root/.pyenv/versions/3.6*/bin/python3.6"))


@pytest.fixture(scope="module")
def py36_path(tmp_path_factory):
    if not PY36:
        pytest.skip("no Python 3.6 interpreter under /root/.pyenv/versions")
    deps = tmp_path_factory.mktemp("py36deps")
    proc = subprocess.run([PY36[0], "-m", "pip", "install", "-q", "--target", str(deps), "dataclasses"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip("could not install the dataclasses backport for 3.6 (registry unreachable?): " + proc.stdout[-500:])
    return os.pathsep.join([str(RUNTIME), str(deps)])


def test_runtime_compiles_on_36():
    if not PY36:
        pytest.skip("no Python 3.6 interpreter under /root/.pyenv/versions")
    files = sorted(str(p) for p in (RUNTIME / "perseus").rglob("*.py"))
    code = "import sys\nfor f in sys.argv[1:]:\n    compile(open(f, encoding='utf-8').read(), f, 'exec')\n"
    proc = subprocess.run([PY36[0], "-c", code] + files, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout


def test_detect_on_36(py36_path):
    got = run_detect({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "PYTHONPATH": py36_path}, python=PY36[0])
    assert got.returncode == 0, got
    assert (got.env["launcher"], got.env["rank"], got.env["local_size"]) == ("openmpi", 1, 2)


def test_perseusrun_and_doctor_on_36(py36_path):  # doctor lists wheels without importlib.metadata there
    env = dict(BASE_ENV, PYTHONPATH=py36_path)
    dry = subprocess.run([PY36[0], "-m", "perseus.run", "-np", "2", "--dry-run", "--json", "--", "true"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert dry.returncode == 0, dry.stderr
    run = subprocess.run([PY36[0], "-m", "perseus.run", "-np", "2", "--", PY36[0], "-m", "perseus.launch"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert '[1]<stdout>:  "rank": 1,' in run.stdout, run.stdout
    doctor = subprocess.run([PY36[0], "-m", "perseus.cli", "doctor", "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert doctor.returncode in (0, 1), doctor.stderr
    report = json.loads(doctor.stdout)
    assert report["launch"]["launcher"] == "single" and report["system"]["python"].startswith("3.6")

