from __future__ import annotations

import json
from pathlib import Path

from aiacc_build.model import Arch
from aiacc_build.render.support import BuildHost, build_location
from aiacc_build.render.support_list import render_support

from .sample_releases import FIXED_HOST, MODERN, SEED, modern_cells, seed_cells


def test_build_here_needs_arch_python_and_a_local_toolkit():
    cpu, _, cu130, cu130_arm, cu124, tf, mx = modern_cells()
    assert build_location(cpu, FIXED_HOST).here
    assert build_location(cu130, FIXED_HOST).here
    assert build_location(cu124, FIXED_HOST).here
    arm = build_location(cu130_arm, FIXED_HOST)
    assert arm.where == "ci" and "aarch64 wheels need an aarch64 machine (this one is x86_64)" in arm.reason
    old = build_location(seed_cells()[0], FIXED_HOST)
    assert old.where == "ci" and old.reason == "no CUDA 11.0 toolkit here (local toolkits: 11.8, 12.4, 13.0)"
    no_py = BuildHost(arch="x86_64", pythons=frozenset({"3.11"}))
    assert "no Python 3.6 interpreter under /root/.pyenv/versions" in build_location(seed_cells()[0], no_py).reason
    # built nowhere until its framework has a binding, whatever the host offers
    location = build_location(tf, FIXED_HOST)
    assert location.where == "none" and "no tensorflow binding" in location.reason
    assert build_location(mx, FIXED_HOST).here  # mxnet has one (native/bindings/mxnet): CPU, Python 3.9


def test_reasons_combine():
    cell = seed_cells()[0]
    reason = build_location(cell, BuildHost(arch="aarch64", pythons=frozenset())).reason
    assert reason.count("; ") == 2


def test_detect_reads_pyenv_versions(tmp_path: Path):
    for name, binary in (("3.11.7", "python3.11"), ("3.6.15", "python3.6"), ("2.7.18", "python2.7"), ("3.9.1", None)):
        (tmp_path / name / "bin").mkdir(parents=True)
        if binary:
            (tmp_path / name / "bin" / binary).touch()
    host = BuildHost.detect(tmp_path)
    assert host.pythons == frozenset({"3.11", "3.6"})


def test_support_files():
    md, js = render_support(SEED, seed_cells(), FIXED_HOST)
    data = json.loads(js.content)
    assert data["release"] == "1.5.0" and len(data["cells"]) == 5
    first = data["cells"][0]
    assert first["status"] == "listed" and first["build"] == "ci"
    assert first["conda_files"] == ["torch_1.7.1_cuda11.0_py36.yaml"]
    assert first["ci_job"] == "torch-1_7_1-cuda110-x86_64"
    assert "registry.cn-beijing.aliyuncs.com/cto_office/perseus-training:centos7-cu11.0-pt1.7.1-py36-latest" in first["docker_images"]
    assert "5 cells: 0 built on the build machine, 4 built in CI, 1 not built (their framework has no binding yet)." in md.content
    assert [(c["framework"], c["status"], c["ci_job"]) for c in data["cells"][3:]] == [
        ("tensorflow", "not built", None), ("mxnet", "listed", "mxnet-1_7_0-cuda100-x86_64")]
    modern = json.loads(render_support(MODERN, modern_cells(), FIXED_HOST)[1].content)
    assert [c["build"] for c in modern["cells"]].count("here") == 5
    assert {c["arch"] for c in modern["cells"]} == {a.value for a in Arch}
