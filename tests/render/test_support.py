from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from aiacc_build.wheels.record import BuildRecord
from aiacc_build.adapters.mxnet import MxnetAdapter
from aiacc_build.model import Framework
from aiacc_build.render.support import BuildHost, build_location
from aiacc_build.render.support_list import render_support

from .sample_releases import FIXED_HOST, MODERN, SEED, modern_cells, seed_cells

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

# A record written by `aiacc-build build --release 2.0.0` on this machine, cut down to the cells of the
# sample release (tests/render/sample_releases.py): one cell built, the others deferred with the reason.
RECORDED = Path(__file__).parent / "data" / "2.0.0.record.json"


def recorded() -> BuildRecord:
    return BuildRecord.model_validate_json(RECORDED.read_text())


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
    assert "local toolkits: none" in build_location(cu130, no_py).reason  # no toolkit list unless one was found
    assert build_location(tf, FIXED_HOST).here  # a CPU cell of a framework with a binding
    assert build_location(mx, FIXED_HOST).here  # mxnet has one (native/bindings/mxnet): CPU, Python 3.9


def test_detect_reads_pyenv_versions(tmp_path: Path):
    for name, binary in (("3.11.7", "python3.11"), ("3.6.15", "python3.6"), ("2.7.18", "python2.7"), ("3.9.1", None)):
        (tmp_path / name / "bin").mkdir(parents=True)
        if binary:
            (tmp_path / name / "bin" / binary).touch()
    host = BuildHost.detect(tmp_path)
    assert host.pythons == frozenset({"3.11", "3.6"})


def _rows(markdown: str) -> dict[tuple[str, ...], dict[str, str]]:
    header = None
    rows = {}
    for line in markdown.splitlines():
        if line.startswith("## "):
            break  # the cells' table ends where the next section (BVLC Caffe) begins
        if not line.startswith("| ") or line.startswith("| ---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if header is None:
            header = cells
            continue
        row = dict(zip(header, cells))
        rows[(row["framework"], row["version"], row["CUDA"], row["Python"], row["arch"])] = row
    return rows


def _row_key(cell) -> tuple[str, ...]:
    python = cell.python or "any (" + ", ".join(cell.env_pythons) + ")"
    return (cell.framework.value, cell.framework_version, cell.cuda or "CPU", python, cell.arch.value)


def test_every_count_and_status_in_support_md_equals_the_record():
    record = recorded()
    md, js = render_support(MODERN, modern_cells(), record)
    rows = _rows(md.content)
    of_key = {c.key: c for c in record.cells}
    assert len(rows) == len(modern_cells())
    expected = Counter()
    for cell in modern_cells():
        row = rows[_row_key(cell)]
        rec = of_key.get(cell.key)
        status = "not built yet" if rec is None else rec.status  # the sample's 2.5.1 cell is not in 2.0.0's matrix
        assert row["status"] == status, cell.key
        assert row["reason"] == ("not in the build record (the matrix changed since the build)" if rec is None else rec.tested or rec.reason)
        expected[status] += 1
    summary = re.search(r"(\d+) cells: (\d+) built, (\d+) deferred, (\d+) not built yet\.", md.content)
    assert summary is not None
    assert tuple(map(int, summary.groups())) == (len(rows), expected["built"], expected["deferred"], expected["not built yet"])
    assert json.loads(js.content)["counts"] == {s: expected[s] for s in ("built", "deferred", "not built yet")}
    assert expected["built"] == 1 and expected["not built yet"] == 1  # the recorded build made one wheel


def test_caffe_artifacts_are_listed_after_the_cells():
    md, js = render_support(MODERN, modern_cells(), None)
    section = md.content.split("## BVLC Caffe", 1)[1]
    assert "`caffe/patches/bvlc_caffe/1_perseus_distribute_train.patch` | patch | any |" in section
    assert "`caffe/libperseus-caffe-2.0.0-linux_x86_64.tar.gz` | library | linux_x86_64 |" in section
    assert "99bd99795dcdf0b1d3086a8d67ab1782a8a08383" in section
    caffe = json.loads(js.content)["caffe"]
    assert [a["kind"] for a in caffe] == ["patch"] * 3 + ["library"] * 2  # aarch64 and x86_64


def test_frameworks_without_a_binding_are_never_built(monkeypatch):
    # every framework has a binding today: take mxnet's away, as an adapter declares it
    monkeypatch.setattr(MxnetAdapter, "binding_missing", "not supported yet: no mxnet binding")
    for record in (recorded(), None):
        entries = json.loads(render_support(MODERN, modern_cells(), record)[1].content)["cells"]
        for entry in entries:
            if entry["framework"] == "mxnet":
                assert entry["status"] != "built" and entry["ci_job"] is None
                if record is None:  # with a record, a deferred cell keeps the record's reason
                    assert entry["reason"] == "not supported yet: no mxnet binding"


def test_built_needs_a_wheel_in_the_record():
    record = recorded()
    built = next(c for c in record.cells if c.status == "built")
    without_wheel = record.model_copy(update={"cells": [c.model_copy(update={"sha256": None}) if c is built else c for c in record.cells]})
    entries = json.loads(render_support(MODERN, modern_cells(), without_wheel)[1].content)["cells"]
    assert next(e for e in entries if e["key"] == built.key)["status"] != "built"


def test_no_record_says_not_built_yet():
    md, js = render_support(SEED, seed_cells(), None)
    data = json.loads(js.content)
    assert data["release"] == "1.5.0" and len(data["cells"]) == 5 and data["build_record"] is None
    assert {c["status"] for c in data["cells"]} == {"not built yet"}
    assert "5 cells: not built yet (no build record of this release)." in md.content
    first = data["cells"][0]
    assert first["conda_files"] == ["torch_1.7.1_cuda11.0_py36.yaml"]
    assert first["ci_job"] == "torch-1_7_1-cuda110-x86_64"
    assert "registry.cn-beijing.aliyuncs.com/cto_office/perseus-training:centos7-cu11.0-pt1.7.1-py36-latest" in first["docker_images"]
    assert "here" not in md.content.split("| --- |", 1)[1]
    # every framework has a binding now: each cell has its CI job
    assert [(c["framework"], c["status"], c["ci_job"]) for c in data["cells"][3:]] == [
        ("tensorflow", "not built yet", "tensorflow-2_4_0-cuda110-x86_64"),
        ("mxnet", "not built yet", "mxnet-1_7_0-cuda100-x86_64")]


def test_a_record_of_another_release_is_refused():
    with pytest.raises(ValueError, match="build record is of release 2.0.0, not 1.5.0"):
        render_support(SEED, seed_cells(), recorded())
