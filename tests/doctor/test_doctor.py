"""`perseus doctor`: the report, the sources of the launch numbers, and a non-zero exit on a mismatch."""

import importlib.metadata
import json
import sys

import pytest

from doctor_helpers import doctor, install_framework_wheel, site_path

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

try:
    from importlib import metadata
except ImportError:  # pragma: no cover
    import importlib_metadata as metadata


def _torch():
    import torch

    return torch


@pytest.fixture(scope="module")
def report():
    proc = doctor("--json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_report_describes_this_machine(report):
    code, r = report
    torch = _torch()
    assert r["launch"]["launcher"] == "single" and r["launch"]["sources"]["rank"]
    fw = r["frameworks"]["torch"]
    assert fw["version"] == torch.__version__ and fw["cuda"] == torch.version.cuda
    assert fw["cxx11_abi"] == bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    assert fw["gloo"] is True and fw["distributed"] is True
    names = {w["name"].replace("_", "-").lower(): w for w in r["perseus"]}
    assert names["perseus-common"]["version"] == metadata.version("perseus-common")
    assert "driver" in r and "version" in r["driver"] and r["system"]["python"].startswith("{}.{}".format(*sys.version_info[:2]))
    assert r["tools"]["perseusrun"], "perseusrun is found next to the interpreter"
    assert code == (0 if r["ok"] else 1)
    assert r["ok"], [p for p in r["problems"] if p["severity"] == "error"]


def test_installed_perseus_torch_matches(report):
    _, r = report
    wheels = [w for w in r["perseus"] if w["name"].replace("-", "_").lower() == "perseus_torch"]
    if not wheels:
        pytest.skip("no perseus_torch is installed in this environment (the torch-binding stage builds it)")
    torch = _torch()
    manifest = wheels[0]["manifest"]
    assert manifest["torch_version"] == torch.__version__ and wheels[0]["manifest_path"].endswith("perseus/torch/build_manifest.json")
    assert not [p for p in r["problems"] if "perseus_torch" in p["what"]]


def test_contradictory_launch_environment_is_an_error():
    proc = doctor("--json", env={"RANK": "1", "WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4"})
    assert proc.returncode == 1
    r = json.loads(proc.stdout)
    assert "disagree" in r["launch"]["error"]
    assert any(p["severity"] == "error" and "RANK=1" in p["what"] and "OMPI_COMM_WORLD_RANK=2" in p["what"] for p in r["problems"])


def test_mismatched_perseus_torch_fails_with_what_to_install(tmp_path):
    manifest = {"schema": 1, "package": "perseus_torch", "release": "1.5.0", "version": "1.5.0+1.7.1",
                "torch_version": "1.7.1", "torch_cuda": "11.0", "cxx11_abi": False, "python_tag": "cp36",
                "compiler": {"id": "GNU", "version": "7.3.1"}}
    site = install_framework_wheel(tmp_path, "1.5.0+1.7.1", manifest)
    proc = doctor("--json", env={"PYTHONPATH": site_path(site)})
    assert proc.returncode == 1, proc.stdout
    r = json.loads(proc.stdout)
    torch = _torch()
    ours = [w for w in r["perseus"] if w["location"] == str(site)]
    assert ours and ours[0]["manifest"]["torch_version"] == "1.7.1"
    errors = [p for p in r["problems"] if p["severity"] == "error" and "was built for another environment" in p["what"]]
    assert len(errors) == 1, r["problems"]
    what, fix = errors[0]["what"], errors[0]["fix"]
    assert "torch 1.7.1 (built) vs {} (installed)".format(torch.__version__) in what
    assert "CUDA 11.0 (built)" in what and "pre-cxx11 ABI (built) vs cxx11 ABI (torch)" in what
    assert "Python cp36 (built) vs cp{}{} (running)".format(*sys.version_info[:2]) in what
    common = importlib.metadata.version("perseus-common")  # doctor advises the wheel of perseus-common's release
    assert "perseus_torch {}+{}".format(common, torch.__version__.split("+")[0]) in fix and "install_AIACC-Training.sh" in fix
    # The text report, under a launcher this time: each number with the variable that gave it.
    launcher = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}
    text = doctor(env=dict(launcher, PYTHONPATH=site_path(site))).stdout
    assert "launcher: openmpi" in text and "<- OMPI_COMM_WORLD_RANK=1" in text and "<- MASTER_ADDR=10.0.0.1" in text
    assert "NVIDIA driver" in text and "torch {}".format(torch.__version__) in text and "perseus-common" in text
    assert "ERROR: perseus_torch 1.5.0+1.7.1 was built for another environment" in text
    assert "built for torch 1.7.1, CUDA 11.0, pre-cxx11 ABI, cp36, compiler GNU 7.3.1" in text


def test_release_mismatch_with_perseus_common(tmp_path):
    torch = _torch()
    manifest = {"release": "1.4.0", "version": "1.4.0+" + torch.__version__, "torch_version": torch.__version__,
                "torch_cuda": torch.version.cuda, "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
                "python_tag": "cp{}{}".format(*sys.version_info[:2])}
    site = install_framework_wheel(tmp_path, "1.4.0", manifest)
    proc = doctor("--json", env={"PYTHONPATH": site_path(site)})
    assert proc.returncode == 1
    problems = json.loads(proc.stdout)["problems"]
    assert any("is of release 1.4.0 but perseus-common is" in p["what"] and "perseus-common==1.4.0" in p["fix"] for p in problems)
    assert not any("was built for another environment" in p["what"] for p in problems), "the build itself matches"


def test_framework_that_does_not_import_is_reported(tmp_path):
    # The FAQ case: a torch whose CUDA runtime is missing fails at import with a libcudart error.
    broken = tmp_path / "shadow" / "torch"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('libcudart.so.11.0: cannot open shared object file: No such file or directory')\n")
    proc = doctor("--json", env={"PYTHONPATH": str(tmp_path / "shadow")})
    assert proc.returncode == 1
    r = json.loads(proc.stdout)
    assert "libcudart.so.11.0" in r["frameworks"]["torch"]["import_error"]
    assert any("does not import" in p["what"] and "pip install --force-reinstall torch==" in p["fix"] for p in r["problems"])


@pytest.mark.parametrize("cuda,driver", [("10.2", "440.33"), ("11.0", "450.80.02"), ("11.8", "450.80.02"),
                                         ("12.4", "525.60.13"), ("13.0", "580.65.06")])
def test_minimum_driver_table(cuda, driver):
    from perseus.doctor import _min_driver

    assert _min_driver(cuda) == driver


def test_perseus_help():
    import subprocess
    from doctor_helpers import BASE_ENV, PERSEUS

    proc = subprocess.run([PERSEUS, "doctor", "-h"], stdout=subprocess.PIPE, universal_newlines=True, env=BASE_ENV)
    assert proc.returncode == 0 and "--json" in proc.stdout and "Exit code 1 when a mismatch is found" in " ".join(proc.stdout.split())


def test_parts_are_listed_and_a_missing_one_is_an_error(tmp_path):
    """doctor lists the MPI bootstrap plugins a wheel's manifest declares, and names one that is not on disk."""
    torch = _torch()
    common = importlib.metadata.version("perseus-common")
    manifest = {"release": common, "version": "{}+{}".format(common, torch.__version__.split("+")[0]),
                "torch_version": torch.__version__,
                "torch_cuda": torch.version.cuda, "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
                "python_tag": "py3", "mpi_plugins": ["libperseus_mpi_openmpi.so", "libperseus_mpi_mpich.so"],
                "mpi_headers": {"openmpi": "libopenmpi-dev 4.1.4-3+b1 (Debian bookworm amd64)",
                                "mpich": "libmpich-dev 4.0.2-3+b1 (Debian bookworm amd64)"}}
    site = install_framework_wheel(tmp_path, manifest["version"], manifest, files=("libperseus_mpi_openmpi.so",))
    proc = doctor("--json", env={"PYTHONPATH": site_path(site)})
    assert proc.returncode == 1, proc.stdout
    problems = json.loads(proc.stdout)["problems"]
    missing = [p for p in problems if p["severity"] == "error" and "lacks" in p["what"]]
    assert len(missing) == 1 and "libperseus_mpi_mpich.so" in missing[0]["what"], problems
    assert "mpich MPI bootstrap plugin" in missing[0]["what"] and "--force-reinstall" in missing[0]["fix"]
    text = doctor(env={"PYTHONPATH": site_path(site)}).stdout
    assert ("parts: libperseus_mpi_openmpi.so (libopenmpi-dev 4.1.4-3+b1 (Debian bookworm amd64)), "
            "libperseus_mpi_mpich.so (MISSING; libmpich-dev 4.0.2-3+b1 (Debian bookworm amd64))") in text, text
