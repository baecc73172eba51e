from __future__ import annotations

import yaml

from aiacc_build import naming
from aiacc_build.model import group_cells
from aiacc_build.adapters import adapter_for, excluded_libraries
from aiacc_build.render.ci import ci_job, render_ci

from .sample_releases import MODERN, SEED, modern_cells, seed_cells


def _workflow(release, cells):
    return yaml.safe_load(render_ci(release, cells).content)


def _with_binding(groups):
    return [g for g in groups if adapter_for(g.framework).binding_missing is None]


def test_one_job_per_group_with_a_binding_plus_common_and_index():
    groups = group_cells(modern_cells())
    jobs = _workflow(MODERN, modern_cells())["jobs"]
    caffe = {"caffe-linux-x86-64", "caffe-linux-aarch64"}  # the sample release's Caffe archives, one per arch
    assert set(jobs) == {naming.ci_job_id(g) for g in _with_binding(groups)} | {"perseus-common", "index", "install-check"} | caffe
    assert set(jobs["index"]["needs"]) == set(jobs) - {"index", "install-check"}
    assert jobs["install-check"]["needs"] == "index"


def test_caffe_job_builds_and_packages_on_debian():
    job = _workflow(MODERN, modern_cells())["jobs"]["caffe-linux-x86-64"]
    assert job["container"] == "debian:bookworm" and job["runs-on"] == "ubuntu-24.04"
    runs = [s.get("run", "") for s in job["steps"]]
    assert ".venv/bin/aiacc-build caffe build --release 2.0.0" in runs
    assert ".venv/bin/aiacc-build caffe package --release 2.0.0" in runs


def test_job_runs_pinned_cibuildwheel_with_selector_builder_repair_and_test():
    (group,) = [g for g in group_cells(seed_cells()) if naming.ci_job_id(g) == "torch-1_7_1-cuda110-x86_64"]
    job = _workflow(SEED, seed_cells())["jobs"]["torch-1_7_1-cuda110-x86_64"]
    assert job["runs-on"] == "ubuntu-24.04"
    steps = {s.get("name", s.get("uses")): s for s in job["steps"]}
    assert "aiacc-build ci install-cibuildwheel 2.16.5" in steps["Install the build tool and cibuildwheel 2.16.5"]["run"]
    env = steps["Build, repair and test"]["env"]
    assert env["CIBW_BUILD"] == naming.cibw_build_selector(group) == "cp36-manylinux_x86_64 cp38-manylinux_x86_64"
    assert env["CIBW_MANYLINUX_X86_64_IMAGE"] == "perseus-builder:manylinux2014-cuda11.0-x86_64"
    # repair, perseus-common and the self-test are the build tool's own steps, never shell copies
    assert env["CIBW_BEFORE_ALL"].endswith("/opt/aiacc-build/bin/pip install -e {project}")
    assert env["CIBW_REPAIR_WHEEL_COMMAND"] == (
        "/opt/aiacc-build/bin/aiacc-build wheel repair --release 1.5.0 --cuda 11.0 --framework-python python "
        "--dest {dest_dir} {wheel}"
    )
    assert "auditwheel" not in env["CIBW_REPAIR_WHEEL_COMMAND"]
    assert not any(pattern in value for pattern in excluded_libraries() for value in env.values())
    assert env["CIBW_BEFORE_TEST"] == (
        "/opt/aiacc-build/bin/aiacc-build wheel common --release 1.5.0 --out /tmp/perseus-common"
        " && pip install /tmp/perseus-common/perseus_common-1.5.0-py3-none-any.whl"
    )
    assert env["CIBW_BEFORE_BUILD"].startswith("pip install wheel 'scikit-build-core>=0.10' ninja torch==1.7.1+cu110")
    assert env["CIBW_TEST_COMMAND"].startswith(
        "pip install torch==1.7.1+cu110 --find-links https://download.pytorch.org/whl/torch_stable.html && "
    )
    # the wheel's own self-test, with the arguments the local build's post-build test uses
    assert env["CIBW_TEST_COMMAND"].endswith(
        "&& /opt/aiacc-build/bin/aiacc-build wheel selftest --release 1.5.0 --framework torch --framework-version 1.7.1 --python python"
    )
    builder = steps["Build the builder image perseus-builder:manylinux2014-cuda11.0-x86_64"]
    assert "builder-manylinux2014-cuda11_0-x86_64" in builder["run"]


def test_aarch64_jobs_run_on_arm():
    jobs = _workflow(MODERN, modern_cells())["jobs"]
    arm = jobs["torch-2_13_0-cuda130-aarch64"]
    assert arm["runs-on"] == "ubuntu-24.04-arm"
    env = next(s for s in arm["steps"] if s.get("name") == "Build, repair and test")["env"]
    assert env["CIBW_MANYLINUX_AARCH64_IMAGE"] == "perseus-builder:manylinux_2_28-cuda13.0-aarch64"
    assert "--cuda 13.0 " in env["CIBW_REPAIR_WHEEL_COMMAND"]


def test_perseus_common_job_builds_the_release_version_with_the_tool():
    job = _workflow(MODERN, modern_cells())["jobs"]["perseus-common"]
    runs = "\n".join(s.get("run", "") for s in job["steps"])
    assert "aiacc-build wheel common --release 2.0.0 --out mirror" in runs
    assert "native/runtime" not in runs  # never the checkout's own build, whose version is not the release's


def test_index_job_expects_every_wheel_path_of_a_job():
    index = _workflow(MODERN, modern_cells())["jobs"]["index"]
    check = next(s for s in index["steps"] if s.get("name") == "Check that every cell's wheel was built")["run"]
    for cell in modern_cells():
        built = adapter_for(cell.framework).binding_missing is None
        assert (f"\n{naming.wheel_path(cell)}\n" in check) is built
    assert f"\n{naming.common_wheel_path(MODERN)}\n" in check


def test_python_independent_group_builds_once():
    (tf,) = [g for g in group_cells(modern_cells()) if g.framework.value == "tensorflow"]
    job = ci_job(tf)
    assert job.env["CIBW_BUILD"] == "cp311-manylinux_x86_64"
    assert job.output_dir == "cpu" and job.package_dir == "native/bindings/tensorflow"


def test_frameworks_without_a_binding_get_no_job_but_are_listed_with_the_reason():
    content = render_ci(MODERN, modern_cells()).content
    jobs = yaml.safe_load(content)["jobs"]
    for group in group_cells(modern_cells()):
        reason = adapter_for(group.framework).binding_missing
        if reason is None:
            continue
        assert naming.ci_job_id(group) not in jobs
        assert f"#   {group.framework.value} {group.framework_version} CPU x86_64: {reason}" in content
