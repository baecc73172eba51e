"""install_AIACC-Training.sh run for real: venvs with and without a framework, a system Python."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiacc_build import naming
from aiacc_build.model import Arch, Framework
from aiacc_build.render.install_script import render_install_script, table_line
from aiacc_installer.exits import CODE, EXIT_CODES

from render.sample_releases import MODERN, modern_cells, seed_cells

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)



def pyenv_python(minor: str) -> str:
    found = sorted(glob.glob(f"/root/.pyenv/versions/{minor}.*/bin/python{minor}"))
    if not found:
        pytest.skip(f"no Python {minor} under /root/.pyenv/versions")
    return found[-1]


def write_script(tmp_path: Path, release, cells) -> Path:
    path = tmp_path / naming.INSTALL_SCRIPT_NAME
    path.write_text(render_install_script(release, cells).content)
    return path


def run_script(script: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("AIACC_", "PYTHON", "VIRTUAL_ENV"))}
    full_env.update(env or {})
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env=full_env, check=False, timeout=120)


@pytest.fixture(scope="session")
def torch_venv(tmp_path_factory) -> Path:
    """A Python 3.11 venv with the real torch 2.13.0+cpu (local wheel: seconds)."""
    venv = tmp_path_factory.mktemp("torch-venv") / "venv"
    subprocess.run([pyenv_python("3.11"), "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", "torch==2.13.0"], check=True)
    return venv


@pytest.fixture(scope="session")
def real_2_0_0_script(real_releases, tmp_path_factory) -> tuple[Path, object]:
    (release,) = [r for r in real_releases if r.info.version == "2.0.0"]
    return write_script(tmp_path_factory.mktemp("script"), release.info, release.cells), release


def test_dry_run_picks_the_torch_cell_of_the_shipped_release(torch_venv, real_2_0_0_script):
    script, release = real_2_0_0_script
    result = run_script(script, "--dry-run", "--offline", str(torch_venv / "bin/python"))
    assert result.returncode == 0, result.stderr
    (cell,) = [
        c
        for c in release.cells
        if c.framework is Framework("torch") and c.framework_version == "2.13.0" and c.cuda is None and c.python == "3.11" and c.arch is Arch.X86_64
    ]
    assert f"torch 2.13.0+cpu, built for CPU (from the version label +cpu)" in result.stdout
    assert f"decision:   torch -> {naming.wheel_path(cell)}" in result.stdout
    assert naming.wheel_url(cell) in result.stdout
    assert naming.common_wheel_url(release.info) in result.stdout
    assert result.stdout.rstrip().endswith("dry run: nothing was installed (offline: the mirror was not read)")


def test_mirror_override(torch_venv, real_2_0_0_script):
    script, _ = real_2_0_0_script
    result = run_script(script, "-n", "--offline", str(torch_venv / "bin/python"), env={"AIACC_MIRROR_URL": "https://mirror.example/perseus/"})
    assert result.returncode == 0
    assert "https://mirror.example/perseus/cpu/perseus_torch-2.0.0%2B2.13.0-cp311-cp311-" in result.stdout


def test_unsupported_version_lists_the_nearest_cells(torch_venv, tmp_path):
    cells = [c for c in modern_cells() if not (c.framework is Framework("torch") and c.framework_version == "2.13.0" and c.cuda is None and c.python == "3.11")]
    script = write_script(tmp_path, MODERN, cells)
    result = run_script(script, "--dry-run", "--offline", str(torch_venv / "bin/python"))
    assert result.returncode == CODE["unsupported"], result.stdout + result.stderr
    assert "has no build for torch 2.13.0, CPU, Python 3.11, x86_64" in result.stderr
    nearest = result.stderr.split("nearest supported cells:\n", 1)[1].splitlines()
    # Same version and accelerator, other Python first; then the CUDA build; then other versions;
    # another architecture last.
    assert [line.split("  (")[0].strip() for line in nearest] == [
        "torch 2.13.0, CPU, Python 3.12, x86_64",
        "torch 2.13.0, CUDA 13.0, Python 3.11, x86_64",
        "torch 2.5.1, CUDA 12.4, Python 3.10, x86_64",
        "torch 2.13.0, CUDA 13.0, Python 3.11, aarch64",
    ]


def test_venv_without_framework(tmp_path):
    venv = tmp_path / "empty"
    subprocess.run([pyenv_python("3.11"), "-m", "venv", str(venv)], check=True)
    script = write_script(tmp_path, MODERN, modern_cells())
    result = run_script(script, "--dry-run", "--offline", str(venv / "bin/python"))
    assert result.returncode == CODE["no_framework"]
    assert "no deep-learning framework is installed" in result.stderr


def test_decision_snippet_runs_on_python_3_6(tmp_path):
    """1.5.0 serves Python 3.6: the embedded decision code must run there (here: up to 'no framework')."""
    venv = tmp_path / "py36"
    subprocess.run([pyenv_python("3.6"), "-m", "venv", str(venv)], check=True)
    script = write_script(tmp_path, seed_cells()[0].release, seed_cells())
    result = run_script(script, "--dry-run", "--offline", str(venv / "bin/python"))
    assert result.returncode == CODE["no_framework"], result.stderr
    assert "Python 3.6" in result.stdout


SRC = Path(__file__).resolve().parents[2] / "src"


def run_prerequisite_check(python: str) -> subprocess.CompletedProcess:
    """The package's check_prerequisites() under `python`, imported from src/ (no flattening)."""
    program = "import sys; sys.path.insert(0, %r); from aiacc_installer.prerequisites import check_prerequisites; " \
              "check_prerequisites(); print('prerequisites ok')" % str(SRC)
    return subprocess.run([python, "-c", program], capture_output=True, text=True)


def test_python_36_without_the_dataclasses_backport_is_told_how_to_get_it(tmp_path):
    """perseus-common needs the backport on 3.6; the install uses --no-deps on verified files, never an index."""
    venv = tmp_path / "py36"
    subprocess.run([pyenv_python("3.6"), "-m", "venv", str(venv)], check=True)
    result = run_prerequisite_check(str(venv / "bin/python"))
    assert result.returncode == CODE["unsupported"], result.stderr
    assert "Python 3.6 lacks dataclasses, which perseus needs (standard from Python 3.7 on)" in result.stderr
    assert "bin/python -m pip install dataclasses" in result.stderr
    assert run_prerequisite_check(pyenv_python("3.11")).stdout.strip() == "prerequisites ok"


def test_framework_filter(torch_venv, tmp_path):
    script = write_script(tmp_path, MODERN, modern_cells())
    assert run_script(script, "-n", "--offline", "--framework", "pytorch", str(torch_venv / "bin/python")).returncode == 0
    missing = run_script(script, "-n", "--offline", "--framework=tf", str(torch_venv / "bin/python"))
    assert missing.returncode == CODE["no_framework"] and "tensorflow is not installed" in missing.stderr
    bad = run_script(script, "--framework", "caffe2")
    assert bad.returncode == CODE["usage"] and "unknown framework 'caffe2'" in bad.stderr


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--bogus"], "usage", "unknown option '--bogus'"),
        (["python3", "python"], "usage", "one Python command only"),
        (["--framework"], "usage", "--framework needs a name"),
        (["no-such-python-here"], "no_python", "'no-such-python-here' is not a command"),
        (["/bin/true"], "no_python", "does not run as a Python interpreter"),
        (["--mirror"], "usage", "--mirror needs a value"),
        (["--ca-bundle="], "usage", "--ca-bundle needs a value"),
        (["--mirror", "ftp://mirror.example.com/aiacc"], "untrusted_mirror", "only https:// URLs"),
        (["--mirror=http://10.0.0.5/aiacc"], "untrusted_mirror", "plain HTTP on a host that is not this machine"),
        (["--mirror", "/no/such/folder"], "network", "mirror folder /no/such/folder does not exist"),
        (["--mirror", "https://mirror.example.com/", "--ca-bundle", "/no/ca.pem"], "usage", "--ca-bundle /no/ca.pem: no such file"),
    ],
)
def test_argument_and_python_errors(tmp_path, args, code, message):
    script = write_script(tmp_path, MODERN, modern_cells())
    result = run_script(script, *args)
    assert result.returncode == CODE[code], result.stderr
    assert message in result.stderr


def test_python_2_is_refused(tmp_path):
    found = sorted(glob.glob("/root/.pyenv/versions/2.7.*/bin/python2.7"))
    if not found:
        pytest.skip("no Python 2.7 here")
    result = run_script(write_script(tmp_path, MODERN, modern_cells()), found[0])
    assert result.returncode == CODE["no_python"] and "needs Python 3.6 or newer" in result.stderr


def test_help_lists_every_exit_code(tmp_path):
    result = run_script(write_script(tmp_path, MODERN, modern_cells()), "--help")
    assert result.returncode == 0
    for exit_code in EXIT_CODES:
        assert f"  {exit_code.code}  {exit_code.meaning}" in result.stdout


def test_externally_managed_system_python_gets_venv_advice(torch_venv, tmp_path):
    markers = glob.glob("/usr/lib/python3*/EXTERNALLY-MANAGED")
    system = Path("/usr/bin/python3")
    if not markers or not system.exists():
        pytest.skip("no PEP 668 system Python on this machine")
    version = subprocess.run([str(system), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True).stdout.strip()
    if version != "3.11":
        pytest.skip(f"the system Python is {version}; the torch venv is 3.11")
    site = next((torch_venv / "lib").glob("python3.11/site-packages"))
    script = write_script(tmp_path, MODERN, modern_cells())
    result = run_script(script, "--dry-run", "--offline", str(system), env={"PYTHONPATH": str(site)})
    assert result.returncode == CODE["externally_managed"], result.stdout + result.stderr
    assert "PEP 668" in result.stderr and "-m venv --system-site-packages" in result.stderr
    allowed = run_script(script, "--dry-run", "--offline", str(system), env={"PYTHONPATH": str(site), "PIP_BREAK_SYSTEM_PACKAGES": "1"})
    assert allowed.returncode == 0


def test_table_lines():
    cells = seed_cells()
    assert table_line(cells[0]) == "torch 1.7.1 11.0 3.6 x86_64 cuda110/perseus_torch-1.5.0+1.7.1-cp36-cp36m-linux_x86_64.whl"
    assert table_line(cells[3]) == "tensorflow 2.4.0 11.0 any x86_64 cuda110/perseus_tensorflow-1.5.0+2.4.0-py2.py3-none-manylinux1_x86_64.whl"


@pytest.mark.optin("installs tensorflow-cpu 2.21.0 (~1 min)")
def test_torch_and_tensorflow_in_one_venv(torch_venv, real_2_0_0_script, tmp_path):
    venv = tmp_path / "tf"
    subprocess.run([pyenv_python("3.11"), "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin/python")
    subprocess.run([python, "-m", "pip", "install", "-q", "torch==2.13.0", "tensorflow-cpu==2.21.0"], check=True)
    script, _ = real_2_0_0_script
    result = run_script(script, "--dry-run", "--offline", python)
    assert result.returncode == 0, result.stderr
    assert "decision:   torch -> cpu/perseus_torch-2.0.0+2.13.0-cp311-cp311-" in result.stdout
    assert "decision:   tensorflow -> cpu/perseus_tensorflow-2.0.0+2.21.0-py3-none-" in result.stdout
    # The build-info path (used for the `tensorflow` distribution) on the real installed file:
    probe = (
        "import importlib.util, sys; spec = importlib.util.spec_from_file_location('d', sys.argv[1]); "
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); print(m.tensorflow_cuda('tensorflow'))"
    )
    from aiacc_build.render.install_script import DECIDE_PY

    out = subprocess.run([python, "-c", probe, str(DECIDE_PY)], capture_output=True, text=True, check=True).stdout
    assert out.startswith("('cpu', 'the TensorFlow build info in ")
