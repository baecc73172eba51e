"""Local image selection and build inputs (no Docker engine needed)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
import urllib.request

import pytest

from aiacc_build import naming
from aiacc_build.errors import UnsupportedCellError
from aiacc_build.images.build import _step_instruction
from aiacc_build.images.cli import cell_keys
from aiacc_build.images.local import MissingWheelError, _wheels_of, buildable_images, local_images
from aiacc_build.images.registry import free_port
from aiacc_build.hashing import file_sha256
from aiacc_build.images.wheelhouse import LoopbackServer
from aiacc_build.matrix import load_release
from aiacc_build.render.support import BuildHost

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

LOCAL_CELL = "2.0.0/torch-2.13.0/cpu/py3.11/x86_64"
HOST = BuildHost(arch="x86_64", pythons=frozenset({"3.11"}), cuda_toolkits=("13.0",))


def test_local_image_of_the_local_cell_has_the_seed_style_tag():
    release = load_release("2.0.0")
    (image,) = local_images(release.cells, HOST, (LOCAL_CELL,))
    assert image.tags == ("perseus-training:debian12-cpu-pt2.13.0-py311-latest",)
    assert image.args["BASE_IMAGE"] == "perseus-base:debian12-cpu"
    assert image.args["FRAMEWORK_PIP_ARGS"].split()[0] == "torch==2.13.0+cpu"


def test_unknown_cell_names_the_cells_that_have_local_images():
    release = load_release("2.0.0")
    with pytest.raises(UnsupportedCellError) as info:
        local_images(release.cells, HOST, ("2.0.0/torch-9.9.9/cpu/py3.11/x86_64",))
    # named as `build --plan-only` prints keys, which --cell takes
    assert " torch-2.13.0/cpu/py3.11/x86_64," in str(info.value) and "build --plan-only" in str(info.value)


def test_cell_takes_the_key_as_the_plan_prints_it():
    release = load_release("2.0.0")
    assert cell_keys("2.0.0", ("torch-2.13.0/cpu/py3.11/x86_64", LOCAL_CELL)) == (LOCAL_CELL, LOCAL_CELL)
    (image,) = local_images(release.cells, HOST, cell_keys("2.0.0", ("torch-2.13.0/cpu/py3.11/x86_64",)))
    assert image.cell.key == LOCAL_CELL
    with pytest.raises(UnsupportedCellError, match="names release 1.5.0, this build is of --release 2.0.0"):
        cell_keys("2.0.0", ("1.5.0/torch-1.7.1/cuda11.0/py3.6/x86_64",))


def test_images_build_with_the_printed_key_gets_past_the_selection(tmp_path):
    """The CLI with the plan's spelling: it picks the cell and stops only at the missing wheels (no engine started)."""
    tool = str(Path(sys.executable).with_name("aiacc-build"))
    plan = subprocess.run([tool, "build", "--release", "2.0.0", "--plan-only", "--dist", str(tmp_path)],
                          capture_output=True, text=True, env=dict(os.environ, COLUMNS="300"))
    printed = next(line.split()[1].rstrip(":") for line in (plan.stdout + plan.stderr).splitlines()
                   if line.split()[:1] == ["build"] and "torch-2.13.0/cpu/py3.11" in line)
    assert printed == "torch-2.13.0/cpu/py3.11/x86_64"
    result = subprocess.run([tool, "images", "build", "--release", "2.0.0", "--cell", printed, "--dist", str(tmp_path)],
                            capture_output=True, text=True, env=dict(os.environ, COLUMNS="300"))
    assert result.returncode != 0
    assert "needs wheels that are not built" in result.stderr and "no local image" not in result.stderr


def test_missing_wheels_are_named_with_the_fix(tmp_path):
    release = load_release("2.0.0")
    (image,) = local_images(release.cells, HOST, (LOCAL_CELL,))
    with pytest.raises(MissingWheelError, match="aiacc-build build --release 2.0.0") as info:
        _wheels_of(image, tmp_path)
    assert naming.wheel_path(image.cell) in str(info.value)


def test_loopback_server_serves_files_and_digest_matches(tmp_path):
    (tmp_path / "mirror").mkdir()
    payload = b"wheel bytes" * 1000
    (tmp_path / "mirror" / "a+b.whl").write_bytes(payload)
    with LoopbackServer(tmp_path, free_port()) as server:
        body = urllib.request.urlopen(server.url("mirror/" + naming.url_path("a+b.whl"))).read()
    assert body == payload
    assert file_sha256(tmp_path / "mirror" / "a+b.whl") == hashlib.sha256(payload).hexdigest()


def test_build_steps_are_read_from_the_classic_builder_output():
    assert _step_instruction("Step 1/22 : ARG BASE_IMAGE\n") == "ARG"
    assert _step_instruction("Step 2/22 : FROM ${BASE_IMAGE}\n") == "FROM"
    assert _step_instruction("Step 16/22 : RUN set -f  && python -m pip install x\n") == "RUN"
    assert _step_instruction(" ---> Using cache\n") is None
    assert _step_instruction("Collecting torch==2.13.0+cpu (Step 3/4 : of something)\n") is None


def test_without_wheels_nothing_is_buildable_and_every_reason_is_named(tmp_path):
    release = load_release("2.0.0")
    images = local_images(release.cells, HOST)
    with pytest.raises(MissingWheelError) as info:
        buildable_images(images, tmp_path, named=False)
    message = str(info.value)
    assert f"--cells {LOCAL_CELL.split('/', 1)[1]}" in message  # the short key, which --cells matches
    cuda_images = [i for i in images if i.cell.cuda is not None]
    assert cuda_images and all(f"{i.tags[0]} is built in CI" in message for i in cuda_images)


def test_a_named_cuda_cell_fails_loudly_instead_of_being_skipped(tmp_path):
    release = load_release("2.0.0")
    (image,) = [i for i in local_images(release.cells, HOST) if i.cell.cuda is not None][:1]
    with pytest.raises(UnsupportedCellError, match="not supported here yet: the CUDA base"):
        buildable_images([image], tmp_path, named=True)
