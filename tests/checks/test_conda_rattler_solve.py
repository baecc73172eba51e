"""The conda part of the three default cells' rendered files, solved by py-rattler (conda's solver in Rust) against a
local stand-in `conda-forge` channel: metadata-only records of the machine's Pythons (3.9, 3.11) and pip, the
channel names resolved through a file:// channel alias as conda resolves them. What real conda 26.7.1 showed
(bench/RESULTS.md, 2026-11-26): a file listing `nodefaults` fails before any solve, as `nodefaults` is then a channel.

A solve, not an install: the stand-in records hold no files (test_conda_rattler_install.py installs the
same files for real, from a channel of real packages, pip sections included)."""

from __future__ import annotations

import asyncio
import json
import platform
from pathlib import Path

import pytest
import rattler
from rattler import Channel, ChannelConfig

from aiacc_build.checks.conda_env import parse_env_file

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

DEFAULT_FILES = {"torch_2.13.0_cpu_py311.yaml": "3.11", "tensorflow_2.21.0_cpu_py311.yaml": "3.11",
                 "mxnet_1.9.1_cpu_py39.yaml": "3.9"}
PYTHONS = {"3.9": platform.python_version() if platform.python_version().startswith("3.9.") else "3.9.18",
           "3.11": platform.python_version() if platform.python_version().startswith("3.11.") else "3.11.9"}


def _record(name: str, version: str, build: str, depends: list[str], subdir: str, **extra) -> dict:
    return dict(name=name, version=version, build=build, build_number=0, depends=depends, subdir=subdir,
                md5="0" * 32, sha256="0" * 64, size=1, license="stand-in", timestamp=0, **extra)


@pytest.fixture(scope="module")
def standin_alias(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("channels")
    linux = {f"python-{v}-standin_0.tar.bz2": _record("python", v, "standin_0", [], "linux-64") for v in PYTHONS.values()}
    noarch = {"pip-24.0-pyhd8ed1ab_0.tar.bz2": _record("pip", "24.0", "pyhd8ed1ab_0", ["python >=3.7"], "noarch", noarch="python")}
    for subdir, packages in (("linux-64", linux), ("noarch", noarch)):
        (root / "conda-forge" / subdir).mkdir(parents=True)
        (root / "conda-forge" / subdir / "repodata.json").write_text(
            json.dumps({"info": {"subdir": subdir}, "packages": packages, "repodata_version": 1}))
    return f"file://{root}/"


def _solve(env, alias: str):
    config = ChannelConfig(channel_alias=alias)
    channels = [Channel(name, config) for name in env.channels]
    return asyncio.run(rattler.solve(channels, list(env.specs), platforms=["linux-64", "noarch"]))


@pytest.mark.parametrize("name", sorted(DEFAULT_FILES))
def test_the_default_cells_conda_part_solves_on_its_own_channels(rendered_dist, standin_alias, name):
    path = Path(rendered_dist) / "2.0.0" / "conda" / "latest" / name
    env, problems = parse_env_file(str(path), path.read_text())
    assert env is not None, problems
    records = {r.name.normalized: r for r in _solve(env, standin_alias)}
    assert set(records) == {"python", "pip"}
    assert str(records["python"].version).startswith(DEFAULT_FILES[name] + ".")
    assert all(r.channel.startswith(standin_alias) for r in records.values())  # conda-forge only, no defaults


def test_a_file_with_nodefaults_does_not_solve(rendered_dist, standin_alias):
    path = Path(rendered_dist) / "2.0.0" / "conda" / "latest" / "torch_2.13.0_cpu_py311.yaml"
    text = path.read_text().replace("  - conda-forge\n", "  - conda-forge\n  - nodefaults\n", 1)
    env, problems = parse_env_file(str(path), text)
    assert env is not None and "nodefaults" in env.channels, problems
    with pytest.raises(Exception, match="nodefaults"):
        _solve(env, standin_alias)
