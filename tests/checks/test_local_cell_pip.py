"""The LOCAL cell (2.0.0, torch 2.13.0, CPU, Python 3.11, x86_64): the pip part of its rendered conda
file installs for real into a fresh Python 3.11 venv and imports perseus and perseus.torch.

The wheels come from the session build of the local cell (tests/wheels/local_build.py), indexed and
served on 127.0.0.1 by `aiacc_build.index.serve.MirrorServer` (what `aiacc-build serve` runs). The
published mirror URL in the file's lines is rewritten to that server (`rewrite_mirror`: the prefix
`<release mirror_url>/` becomes `http://127.0.0.1:PORT/`); every other line is used as rendered.
download.pytorch.org is unreachable here: pip finds torch 2.13.0+cpu in the local find-links
(/opt/wheels), and `--retries 0` keeps pip from retrying that index for every requirement.

Default: the fresh venv gets torch linked in from uv's cache first (the same file; seconds instead of
~1.5 min of unpacking), then pip installs every line (torch==2.13.0+cpu is then already satisfied).
Opt-in (AIACC_OPTIN=1): the same with a venv that holds nothing, as `conda env create` would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wheels"))

from local_build import LOCAL_KEY, local_build  # noqa: E402,F401
from wheels_testkit import LOCAL_TORCH_FILE  # noqa: E402

from aiacc_build import naming  # noqa: E402
from aiacc_build.checks.conda_env import parse_env_file  # noqa: E402
from aiacc_build.checks.conda_pip import install_pip_section, rewrite_mirror  # noqa: E402
from aiacc_build.index.serve import MirrorServer  # noqa: E402

LOCAL_FILE = "torch_2.13.0_cpu_py311.yaml"


@pytest.fixture(scope="module")
def served(local_build):  # noqa: F811
    with MirrorServer(local_build.root) as server:
        yield server


@pytest.fixture(scope="module")
def local_env_file(local_build):  # noqa: F811
    """The file as the indexed mirror of the build holds it: `index` rewrites the conda files of cells whose
    wheel the build tagged with the platform it proved (naming.wheel_filename)."""
    (cell,) = [c for c in local_build.release.cells if c.key == LOCAL_KEY]
    assert naming.conda_filename(cell, "3.11") == LOCAL_FILE
    path = local_build.root / cell.release.conda_dir / LOCAL_FILE
    env, problems = parse_env_file(str(path), path.read_text())
    assert env is not None, problems
    return env, cell


def test_rewriting_touches_only_the_mirror_lines(local_env_file, local_build):  # noqa: F811
    env, cell = local_env_file
    lines, count = rewrite_mirror(env.pip, cell.release.mirror_url, "http://127.0.0.1:1")
    assert count == 2
    assert lines[-2:] == [
        "http://127.0.0.1:1/perseus_common-2.0.0-py3-none-any.whl",
        "http://127.0.0.1:1/" + naming.url_path(local_build.path(LOCAL_KEY)),
    ]
    assert lines[:-2] == list(env.pip[:-2])  # the framework lines stay as rendered


def _assert_installed(result):
    assert result.ok, result.pip_output[-3000:] + result.import_error
    assert set(result.imported) == {"perseus", "perseus.torch"}
    assert all(str(result.venv) in where for where in result.imported.values())
    out = subprocess.run([str(result.venv / "bin" / "python"), "-m", "perseus.torch._selftest", "2.0.0", "2.13.0"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "compress fp32->fp16 x2.0 ok" in out.stdout


def test_pip_part_installs_from_the_served_mirror_and_imports(local_env_file, served, local_build, tmp_path):  # noqa: F811
    from aiacc_build.wheels.cache import BuildCache
    from aiacc_build.wheels.envs import create_venv, install
    from aiacc_build.wheels.toolchain import find_interpreter

    env, cell = local_env_file
    cache = BuildCache(local_build.cache_dir)
    venv = create_venv(tmp_path / "venv", find_interpreter("3.11"), cache)
    install(venv, [LOCAL_TORCH_FILE, "pip"], cache)
    result = install_pip_section(
        env, tmp_path / "venv", cell.release.mirror_url, served.url, ("perseus", "perseus.torch"), pip_args=("--retries", "0"), prepared=True
    )
    _assert_installed(result)
    assert "Successfully installed" in result.pip_output and "perseus-torch-2.0.0+2.13.0" in result.pip_output


@pytest.mark.optin("pip unpacks torch into an empty venv (~1.5-3 min)")
def test_pip_part_installs_into_an_empty_venv(local_env_file, served, tmp_path):
    env, cell = local_env_file
    result = install_pip_section(env, tmp_path / "venv", cell.release.mirror_url, served.url, ("perseus", "perseus.torch"), pip_args=("--retries", "0"))
    _assert_installed(result)
    assert "torch-2.13.0+cpu" in result.pip_output
