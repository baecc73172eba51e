"""scripts/cibw_pinned_image.py against each release's pinned cibuildwheel (opt-in: downloads from PyPI)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from aiacc_build.paths import REPO_ROOT

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

SCRIPT = REPO_ROOT / "scripts" / "cibw_pinned_image.py"


@pytest.mark.optin("downloads cibuildwheel from PyPI")
def test_pinned_manylinux_image_of_each_release(real_releases, tmp_path):
    for release in real_releases:
        target = tmp_path / release.info.cibuildwheel
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), f"cibuildwheel=={release.info.cibuildwheel}"],
            check=True,
        )
        env = dict(os.environ, PYTHONPATH=str(target))
        for arch in ("x86_64", "aarch64"):
            out = subprocess.run([sys.executable, str(SCRIPT), release.info.manylinux_image, arch], capture_output=True, text=True, env=env)
            assert out.returncode == 0, out.stderr
            image = out.stdout.strip()
            assert image.startswith((f"quay.io/pypa/{release.info.manylinux_image}_{arch}:", f"quay.io/pypa/{release.info.manylinux_image}_{arch}@sha256:"))
            assert " " not in image and "#" not in image
        bad = subprocess.run([sys.executable, str(SCRIPT), "manylinux_9_99", "x86_64"], capture_output=True, text=True, env=env)
        assert bad.returncode != 0 and "pins no manylinux_9_99 image for x86_64" in bad.stderr


def test_without_cibuildwheel_it_says_what_to_install(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-S", str(SCRIPT), "manylinux2014", "x86_64"], capture_output=True, text=True, env=env)
    assert out.returncode != 0 and "cibuildwheel is not installed" in out.stderr
