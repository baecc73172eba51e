"""The three default cells' conda files installed for real, as `conda env create -f` does it: the conda
part solved and installed by py-rattler from a local stand-in `conda-forge` channel (this machine's
pyenv interpreters repackaged as `python`, pip from their bundled wheel: checks/conda_channel.py), then
the file's `pip:` lines run by the new environment's own pip as conda runs them (`python -m pip install
-U -r condaenv.*.requirements.txt` from the file's folder), the release mirror URL pointed at the
session build served on 127.0.0.1; then the framework, perseus and its binding imported and the
binding's self-test run in that environment.

The framework wheels come from what pip finds on this machine (pip.conf: /opt/wheels, the local index
copies, PyPI); download.pytorch.org (torch's extra index) is unreachable here, so PIP_RETRIES=0 keeps
pip from retrying it per requirement (the user's environment, which conda passes on to pip).
The seconds each file takes are printed as one JSON line (`pytest -s`).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import rattler
from rattler import Channel, ChannelConfig

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wheels"))

from local_build import DEFAULT_KEYS, local_build  # noqa: E402,F401

from aiacc_build import naming  # noqa: E402
from aiacc_build.checks.conda_channel import max_prefix_length, write_channel  # noqa: E402
from aiacc_build.checks.conda_env import parse_env_file  # noqa: E402
from aiacc_build.checks.conda_pip import install_pip_section  # noqa: E402
from aiacc_build.index.serve import MirrorServer  # noqa: E402
from support.pyenv import pyenv_prefix  # noqa: E402

# the default cells' files and the Python each names
FILES = {"torch_2.13.0_cpu_py311.yaml": "3.11", "tensorflow_2.21.0_cpu_py311.yaml": "3.11", "mxnet_1.9.1_cpu_py39.yaml": "3.9"}


@pytest.fixture(scope="module")
def pythons() -> list[Path]:
    return [pyenv_prefix(p) for p in sorted(set(FILES.values()))]


@pytest.fixture(scope="module")
def channel(pythons, tmp_path_factory):
    return write_channel(pythons, tmp_path_factory.mktemp("channels"))


@pytest.fixture(scope="module")
def served(local_build):  # noqa: F811
    with MirrorServer(local_build.root) as server:
        yield server


@pytest.fixture
def short_prefix(pythons):
    """A target prefix short enough for the binary prefix rewriting of the stand-in python."""
    folder = Path(tempfile.mkdtemp(prefix="c", dir="/tmp"))
    prefix = folder / "env"
    assert len(str(prefix)) <= max_prefix_length(pythons)
    yield prefix
    shutil.rmtree(folder, ignore_errors=True)


def _cell_and_file(local_build, name):  # noqa: F811
    for key in DEFAULT_KEYS:
        cell = next(c for c in local_build.release.cells if c.key == key)
        python = FILES[name]
        if cell.framework.value == name.split("_")[0]:
            assert naming.conda_filename(cell, python) == name
            return cell, local_build.root / cell.release.conda_dir / name
    raise AssertionError(f"{name}: no default cell")


def test_the_stand_in_python_runs_from_its_new_prefix(channel, short_prefix):
    alias, _ = channel
    records = asyncio.run(rattler.solve([Channel("conda-forge", ChannelConfig(channel_alias=alias))], ["python=3.11", "pip"],
                                        platforms=["linux-64", "noarch"]))
    asyncio.run(rattler.install(records, short_prefix, cache_dir=short_prefix.parent / "pkgs", show_progress=False))
    (python,) = [r for r in records if r.name.normalized == "python"]
    code = ("import sys, platform, ssl, sqlite3, pip; print(sys.prefix); print(platform.python_version());"
            "print([l.split()[-1] for l in open('/proc/self/maps') if 'libpython' in l][0])")
    out = subprocess.run([str(short_prefix / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=short_prefix)
    assert out.returncode == 0, out.stderr
    # the prefix and libpython are the new environment's, not pyenv's; sys.version survived the rewriting
    assert out.stdout.split() == [str(short_prefix), str(python.version), str(short_prefix / "lib" / "libpython3.11.so.1.0")]
    assert b"/.pyenv/" not in (short_prefix / "bin" / "python3.11").read_bytes()


@pytest.mark.parametrize("name", list(FILES))
def test_the_default_cells_conda_file_installs_and_imports(name, channel, served, local_build, short_prefix, tmp_path, monkeypatch):  # noqa: F811
    alias, _ = channel
    cell, path = _cell_and_file(local_build, name)
    # the file in a folder of its own: conda writes the requirements file beside it
    workdir = tmp_path / "envfile"
    workdir.mkdir()
    (workdir / name).write_text(path.read_text())
    env, problems = parse_env_file(str(workdir / name), path.read_text())
    assert env is not None, problems

    start = time.perf_counter()
    config = ChannelConfig(channel_alias=alias)
    records = asyncio.run(rattler.solve([Channel(c, config) for c in env.channels], list(env.specs), platforms=["linux-64", "noarch"]))
    assert sorted(r.name.normalized for r in records) == ["pip", "python"]
    asyncio.run(rattler.install(records, short_prefix, cache_dir=tmp_path / "pkgs", show_progress=False))
    conda_seconds = time.perf_counter() - start

    framework = cell.framework.value
    binding = f"perseus.{framework}"
    monkeypatch.setenv("PIP_RETRIES", "0")
    result = install_pip_section(env, short_prefix, cell.release.mirror_url, served.url, (framework, "perseus", binding),
                                 prepared=True, workdir=workdir)
    assert result.ok, result.pip_output[-3000:] + result.import_error
    assert result.rewritten >= 2  # perseus_common and the binding came from the served build
    assert all(str(short_prefix) in where for where in result.imported.values())
    assert not list(workdir.glob("condaenv.*"))  # the requirements file is removed again

    selftest = subprocess.run([str(short_prefix / "bin" / "python"), "-m", f"{binding}._selftest", "2.0.0", cell.framework_version],
                              capture_output=True, text=True, cwd=short_prefix)
    assert selftest.returncode == 0, selftest.stdout + selftest.stderr
    timing = {"file": name, "conda_solve_install_s": round(conda_seconds, 1), "pip_s": round(result.seconds, 1),
              "total_s": round(time.perf_counter() - start, 1), "python": str(next(r.version for r in records if r.name.normalized == "python")),
              "selftest": selftest.stdout.strip(),
              "pip_installed": next((l for l in result.pip_output.splitlines() if l.startswith("Successfully installed")), "")}
    print(json.dumps(timing))
