"""The conda part of the manual's torch_1.7.1_cuda11.0_py36.yaml (release 1.5.0: channels [pytorch, conda-forge],
python=3.6, pip, pytorch=1.7.1, cudatoolkit=11.0) solved and installed by py-rattler against local stand-in
channels: the machine's pyenv Python 3.6 repackaged as `python` with the pip it bundles, and the metadata-only
stubs of matrix/facts/conda/stand_in_stubs.yaml for pytorch 1.7.1 (pytorch channel), cudatoolkit 11.0 and what
pytorch depends on (checks/conda_stubs.py). Real conda 26.5.3 / 26.7.1 on the same file: bench/RESULTS.md.

The stand-in Python must run from its new prefix with its own version string: before 3.8 libpython's name carries
the ABI flag (libpython3.6m.so.1.0), which the prefix rewriting once missed, leaving sys.version without its
version (real conda showed it: `platform.python_version()` raised ValueError).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import rattler
from rattler import Channel, ChannelConfig

from aiacc_build.checks.conda_channel import max_prefix_length
from aiacc_build.checks.conda_env import parse_env_file
from aiacc_build.checks.conda_stubs import load_stub_facts, write_channels
from support.pyenv import pyenv_prefix

pytestmark = pytest.mark.integration  # starts processes (tests/support/fast_tier.py)

MANUAL_FILE = "1.5.0/conda/latest/torch_1.7.1_cuda11.0_py36.yaml"


@pytest.fixture
def short_prefix():
    folder = Path(tempfile.mkdtemp(prefix="c", dir="/tmp"))
    yield folder / "env"
    shutil.rmtree(folder, ignore_errors=True)


def test_the_manuals_torch_1_7_1_file_solves_and_installs_against_the_stubs(rendered_dist, tmp_path, short_prefix):
    python36 = pyenv_prefix("3.6")
    assert len(str(short_prefix)) <= max_prefix_length([python36])
    alias, _ = write_channels(tmp_path / "channels", [python36])
    path = Path(rendered_dist) / MANUAL_FILE
    env, problems = parse_env_file(str(path), path.read_text())
    assert env is not None, problems
    assert env.channels == ("pytorch", "conda-forge")

    config = ChannelConfig(channel_alias=alias)
    records = asyncio.run(rattler.solve([Channel(c, config) for c in env.channels], list(env.specs),
                                        platforms=["linux-64", "noarch"]))
    solved = {r.name.normalized: r for r in records}
    stubs = {r.name for records in load_stub_facts().channels.values() for r in records}
    assert set(solved) == stubs | {"python", "pip"}
    assert str(solved["pytorch"].build) == "py3.6_cuda11.0.221_cudnn8.0.5_0"
    assert str(solved["python"].version).startswith("3.6.") and str(solved["pip"].version) == "18.1"  # newer pips need 3.7

    asyncio.run(rattler.install(records, short_prefix, cache_dir=tmp_path / "pkgs", show_progress=False))
    meta = {json.loads(p.read_text())["name"] for p in (short_prefix / "conda-meta").glob("*.json")}
    assert meta == set(solved)
    code = "import sys, platform, pip; print(sys.prefix, platform.python_version(), pip.__version__)"
    out = subprocess.run([str(short_prefix / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=short_prefix)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(short_prefix), str(solved["python"].version), "18.1"]
    # metadata only: the stubs linked no file
    torch = subprocess.run([str(short_prefix / "bin" / "python"), "-c", "import torch"], capture_output=True, text=True, cwd=short_prefix)
    assert "No module named 'torch'" in torch.stderr
