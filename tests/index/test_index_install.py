"""The served mirror of the local build, installed with pip into fresh environments holding torch 2.13.0:
through a folder's index (`--index-url <mirror>/cpu/simple/`) and the 1.5.0 manual's one-URL way
(`pip install <wheel URL>`, with the mirror's root index for perseus-common).
"""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest
import requests
from local_build import LOCAL_KEY
from wheels_testkit import LOCAL_TORCH_FILE, check_torch_op

from aiacc_build import naming
from aiacc_build.wheels.cache import BuildCache
from aiacc_build.wheels.envs import Venv, create_venv, install
from aiacc_build.wheels.toolchain import find_interpreter
from aiacc_build.index.serve import MirrorServer

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)



@pytest.fixture(scope="module")
def mirror(local_build):
    with MirrorServer(local_build.root) as server:
        yield server


def _pip_env() -> dict[str, str]:
    """Only the served mirror answers: no pip config, no find-links (the CA bundle stays)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "VIRTUAL_ENV"))}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_CERT=os.environ.get("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt"),
    )
    return env


@pytest.fixture
def torch_env(local_build, tmp_path) -> Venv:
    """A fresh Python 3.11 environment with pip and exactly torch 2.13.0+cpu (the uv cache links it in)."""
    interpreter = find_interpreter("3.11")
    assert interpreter is not None
    cache = BuildCache(local_build.cache_dir)
    env = create_venv(tmp_path / "venv", interpreter, cache)
    install(env, [LOCAL_TORCH_FILE, "pip"], cache)
    return env


def _pip(env: Venv, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(env.python), "-m", "pip", "install", *args], env=_pip_env(), capture_output=True, text=True
    )


def _local_cell(local_build):
    return local_build.torch_result.plan.cell


def test_pip_install_from_the_folder_index(local_build, mirror, torch_env):
    cell = _local_cell(local_build)
    index = naming.simple_index_url(mirror.url, naming.accelerator_folder(cell))
    assert index.endswith("/cpu/simple/")
    proc = _pip(torch_env, "--index-url", index, f"perseus_torch=={naming.wheel_version(cell)}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compress fp32->fp16 x2.0 ok" in check_torch_op(torch_env.python, "2.0.0")


def test_one_url_install_with_the_root_index_for_perseus_common(local_build, mirror, torch_env):
    cell = _local_cell(local_build)
    url = f"{mirror.url}/{naming.url_path(local_build.path(LOCAL_KEY))}"
    assert "%2B" in url  # the seed's encoding of `+`
    proc = _pip(torch_env, url, "--extra-index-url", naming.simple_index_url(mirror.url, None))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compress fp32->fp16 x2.0 ok" in check_torch_op(torch_env.python, "2.0.0")


def test_one_url_alone_cannot_find_perseus_common(local_build, mirror, torch_env):
    """Why the manual's one-URL line needs the mirror's root index: the wheel requires perseus-common."""
    url = f"{mirror.url}/{naming.url_path(local_build.path(LOCAL_KEY))}"
    proc = _pip(torch_env, "--no-index", url)
    assert proc.returncode != 0
    assert "perseus-common==2.0.0" in proc.stdout + proc.stderr


def test_every_served_file_matches_sha256sums(local_build, mirror):
    sums = requests.get(f"{mirror.url}/{naming.CHECKSUMS_FILENAME}", timeout=10).text.splitlines()
    paths = [line.split("  ", 1)[1] for line in sums]
    assert "manifest.json" in paths and local_build.path(LOCAL_KEY) in paths
    for line in sums:
        digest, path = line.split("  ", 1)
        body = requests.get(f"{mirror.url}/{naming.url_path(path)}", timeout=30).content
        assert hashlib.sha256(body).hexdigest() == digest, path


def test_served_manifest_points_at_served_files(local_build, mirror):
    manifest = requests.get(f"{mirror.url}/manifest.json", timeout=10).json()
    built_cells = [c for c in manifest["cells"] if c["status"] == "built"]
    assert len(built_cells) == 3  # torch, TensorFlow, MXNet
    for built in built_cells:
        head = requests.head(f"{mirror.url}/{naming.url_path(built['path'])}", timeout=10)
        assert head.status_code == 200 and int(head.headers["Content-Length"]) == built["size"]
    common = requests.head(f"{mirror.url}/{manifest['common']['path']}", timeout=10)
    assert common.status_code == 200
