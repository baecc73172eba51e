"""Cells for a Python older than the build backend supports (cp36): a newer interpreter runs
scikit-build-core for the framework installed for the cell's Python, and the wheel is re-tagged.

The full build is opt-in (bench/optin_builds.py probes torch 1.8.0 for CPython 3.6); these check the parts.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest
from packaging.tags import Tag
from packaging.utils import parse_wheel_filename
from wheels_testkit import torch_cell

from aiacc_build.wheels.binding import BindingEnvs, BindingSpec, build_environment
from aiacc_build.wheels.envs import Venv
from aiacc_build.wheels.repair import retag
from aiacc_build.wheels.toolchain import BACKEND_MIN_PYTHON, Interpreter, backend_interpreter, find_interpreter

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_backend_runs_in_the_cells_interpreter_where_it_can():
    own = Interpreter(python="3.7", version="3.7.16", executable=Path("/x/python3.7"))
    assert backend_interpreter(own) is own
    old = Interpreter(python="3.6", version="3.6.15", executable=Path("/x/python3.6"))
    backend = backend_interpreter(old)
    assert tuple(int(p) for p in backend.python.split(".")) >= BACKEND_MIN_PYTHON
    assert backend.executable.is_file()


def test_a_backend_in_the_cells_own_env_needs_no_pointers():
    spec = BindingSpec(source=Path("/src"), name="perseus_torch", build_requires=("scikit-build-core>=0.10",))
    cell = torch_cell("2.13.0", None, "3.11")
    envs = BindingEnvs(framework=Venv(Path("/envs/py311")), backend=None, backend_python="3.11.7")
    env = build_environment(cell, 2, spec, envs)
    assert env == {"PERSEUS_RELEASE": "2.0.0", "CMAKE_BUILD_PARALLEL_LEVEL": "2"}


def test_a_separate_backend_is_told_where_the_framework_is(tmp_path):
    site = tmp_path / "py36" / "lib" / "python3.6" / "site-packages"
    site.mkdir(parents=True)
    spec = BindingSpec(source=Path("/src"), name="perseus_torch", build_requires=())
    cell = torch_cell("1.8.0", None, "3.6", requirement="torch==1.8.0", variant=None)
    envs = BindingEnvs(framework=Venv(tmp_path / "py36"), backend=Venv(tmp_path / "tools"), backend_python="3.11.7")
    env = build_environment(cell, 2, spec, envs)
    assert env["PERSEUS_TORCH_DIR"] == str(site / "torch")
    assert "PERSEUS_PYTHON_TAG" not in env  # the library is Python-free; repair re-tags the wheel for cp36


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(folder: Path, tag: str) -> Path:
    """A minimal valid wheel of a platform-specific distribution (what scikit-build-core's backend makes)."""
    name = f"demo-1.0-{tag}.whl"
    files = {
        "demo/__init__.py": b"",
        "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        "demo-1.0.dist-info/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
        ),
    }
    record = "\n".join([*(_record_line(n, d) for n, d in files.items()), "demo-1.0.dist-info/RECORD,,"]) + "\n"
    with zipfile.ZipFile(folder / name, "w") as zf:
        for n, d in files.items():
            zf.writestr(n, d)
        zf.writestr("demo-1.0.dist-info/RECORD", record)
    return folder / name


def test_retag_rewrites_python_abi_and_platform(tmp_path):
    wheel = make_wheel(tmp_path, "cp311-cp311-manylinux_2_34_x86_64")
    new = retag(wheel, Tag("cp36", "cp36m", "linux_x86_64"))
    assert new.name == "demo-1.0-cp36-cp36m-linux_x86_64.whl"
    assert parse_wheel_filename(new.name)[3] == {Tag("cp36", "cp36m", "linux_x86_64")}
    with zipfile.ZipFile(new) as zf:
        assert "Tag: cp36-cp36m-linux_x86_64" in zf.read("demo-1.0.dist-info/WHEEL").decode()
    # the platform alone where only it differs
    same_python = retag(
        make_wheel(tmp_path, "cp311-cp311-manylinux_2_34_x86_64"), Tag("cp311", "cp311", "linux_x86_64")
    )
    assert same_python.name == "demo-1.0-cp311-cp311-linux_x86_64.whl"


@pytest.mark.skipif(find_interpreter("3.6") is None, reason="no Python 3.6 here")
def test_the_backend_for_36_is_a_real_newer_interpreter():
    backend = backend_interpreter(find_interpreter("3.6"))  # type: ignore[arg-type]
    assert backend.python != "3.6" and backend.executable.is_file()
