"""`check ci`: the release's own cibuildwheel lists exactly each job's cells; builder images, pins and
the index job agree with the release. cibuildwheel 2.16.5 and 4.3.5 are pip-installed once into
.cache/cibuildwheel/ (about 20 s the first time, then cached)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from aiacc_build import naming
from aiacc_build.checks.ci_check import ReleaseCiChecker, _load_yaml, check_ci
from aiacc_build.checks.cibw import Selection, build_identifiers, ensure_cibuildwheel
from aiacc_build.checks.findings import CheckReport
from aiacc_build.adapters import adapter_for
from aiacc_build.model import group_cells
from aiacc_build.render.docker import BAKE_FILE

from .conftest import release

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


@pytest.fixture(scope="session")
def cibw(releases):
    return {r.info.cibuildwheel: ensure_cibuildwheel(r.info.cibuildwheel) for r in releases}


def workflow_path(dist, rel):
    return dist / rel.info.version / "ci" / naming.ci_workflow_filename(rel.info)


def edit_workflow(dist, rel, change):
    path = workflow_path(dist, rel)
    data = _load_yaml(path)
    change(data["jobs"])
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def build_env(job) -> dict:
    (step,) = [s for s in job["steps"] if "cibuildwheel --output-dir" in (s.get("run") or "")]
    return step["env"]


def run_release(rel, dist, cibw_env):
    report = CheckReport("ci")
    ReleaseCiChecker(rel, dist, cibw_env, report).run()
    return report


def test_every_job_of_every_release_selects_exactly_its_cells(releases, rendered_dist, cibw):
    report = check_ci(releases, rendered_dist)
    assert report.errors == []
    # the cells whose framework has a binding: the others get no job (their adapter says why)
    with_job = [g for r in releases for g in group_cells(r.cells) if adapter_for(g.framework).binding_missing is None]
    assert report.checked["identifiers"] == sum(len(g.cells) for g in with_job)
    assert report.checked["jobs"] == report.checked["builder images"] == len(with_job)
    # each release ran its own declared cibuildwheel
    for rel in releases:
        assert any(f"cibuildwheel {rel.info.cibuildwheel} from" in note for note in report.notes)


def test_a_selector_that_builds_more_or_less_is_named(releases, dist_copy, cibw):
    seed = release(releases, "1.5.0")

    def widen(jobs):
        build_env(jobs["torch-1_7_1-cuda110-x86_64"])["CIBW_BUILD"] = "cp3*-manylinux_x86_64"
        build_env(jobs["torch-1_6_0-cuda102-x86_64"])["CIBW_BUILD"] = "cp36-manylinux_x86_64"

    edit_workflow(dist_copy, seed, widen)
    report = run_release(seed, dist_copy, cibw[seed.info.cibuildwheel])
    by_job = {f.subject: f.message for f in report.errors if f.rule == "selector"}
    assert set(by_job) == {"torch-1_7_1-cuda110-x86_64", "torch-1_6_0-cuda102-x86_64"}
    assert "also builds cp310-manylinux_x86_64, cp311-manylinux_x86_64, cp312-manylinux_x86_64" in by_job["torch-1_7_1-cuda110-x86_64"]
    assert "does not build cp37-manylinux_x86_64, cp38-manylinux_x86_64" in by_job["torch-1_6_0-cuda102-x86_64"]


def test_the_release_must_use_its_own_cibuildwheel(releases, rendered_dist, cibw):
    # cibuildwheel 4.x dropped CPython 3.6 and 3.7: the 1.5.0 jobs only work with its pinned 2.16.5.
    seed = release(releases, "1.5.0")
    report = run_release(seed, rendered_dist, cibw["4.3.5"])
    failing = {f.subject for f in report.errors if f.rule == "selector"}
    assert "torch-1_7_1-cuda110-x86_64" in failing
    message = next(f.message for f in report.errors if f.subject == "torch-1_7_1-cuda110-x86_64")
    assert "does not build cp36-manylinux_x86_64, cp37-manylinux_x86_64" in message


def test_builder_images_pins_and_index_are_checked(releases, dist_copy, cibw):
    modern = release(releases, "2.0.0")
    job_id = "torch-2_13_0-cuda130-x86_64"

    def tamper(jobs):
        for step in jobs[job_id]["steps"]:
            if "pip install" in (step.get("run") or ""):
                step["run"] = step["run"].replace(f"install-cibuildwheel {modern.info.cibuildwheel}", "install-cibuildwheel 3.1.4")
        index = jobs["index"]
        index["needs"].remove(job_id)
        jobs["install-check"]["needs"] = [job_id]
        jobs["install-check"]["steps"] = [s for s in jobs["install-check"]["steps"] if "install_AIACC" not in str(s.get("run"))]

    edit_workflow(dist_copy, modern, tamper)
    bake_path = dist_copy / "2.0.0" / BAKE_FILE
    bake = json.loads(bake_path.read_text())
    target = naming.builder_bake_target(modern.info, "13.0", "x86_64")
    del bake["target"][target]
    bake_path.write_text(json.dumps(bake))
    report = run_release(modern, dist_copy, cibw[modern.info.cibuildwheel])
    found = {(f.rule, f.subject) for f in report.errors}
    assert ("cibuildwheel-pin", job_id) in found
    assert ("index-needs", "index") in found
    assert ("install-check-needs", "install-check") in found and ("install-check-script", "install-check") in found
    assert ("builder-not-in-bake", job_id) in found
    assert ("builder-not-in-bake", "torch-2_12_1-cuda130-x86_64") in found  # every job on that builder
    pin = next(f for f in report.errors if f.rule == "cibuildwheel-pin")
    assert "installs cibuildwheel 3.1.4; release 2.0.0 declares 4.3.5" in pin.message


def test_index_job_must_expect_every_wheel(releases, dist_copy):
    seed = release(releases, "1.5.0")
    path = workflow_path(dist_copy, seed)
    cell = seed.cells[0]
    text = path.read_text()
    assert f"          {naming.wheel_path(cell)}\n" in text
    path.write_text(text.replace(f"          {naming.wheel_path(cell)}\n", "", 1))
    report = run_release(seed, dist_copy, None)
    (finding,) = [f for f in report.errors if f.rule == "index-expected"]
    assert naming.wheel_path(cell) in finding.message


def test_one_process_for_all_jobs_answers_like_one_process_per_job(releases, rendered_dist, cibw, tmp_path):
    seed = release(releases, "1.5.0")
    jobs = _load_yaml(workflow_path(rendered_dist, seed))["jobs"]
    envs = [build_env(jobs[j]) for j in ("torch-1_7_1-cuda110-x86_64", "torch-1_6_0-cuda102-x86_64", "torch-1_2_0-cuda100-x86_64")]
    env = cibw[seed.info.cibuildwheel]
    together = build_identifiers(env, [Selection(e, None) for e in envs])
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    for job_env, (ids, error) in zip(envs, together):
        alone = subprocess.run(
            [str(env.python), "-m", "cibuildwheel", "--print-build-identifiers", "--platform", "linux", str(tmp_path)],
            capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **job_env}, check=True,
        )
        assert error is None and ids == alone.stdout.split()
    assert together[0][0] == ["cp36-manylinux_x86_64", "cp37-manylinux_x86_64", "cp38-manylinux_x86_64", "cp39-manylinux_x86_64"]


def test_options_cibuildwheel_rejects_are_findings(releases, cibw):
    env = cibw["2.16.5"]
    (bad, good) = build_identifiers(env, [Selection({"CIBW_ARCHS_LINUX": "x86-64"}, None), Selection({"CIBW_BUILD": "cp39-manylinux_x86_64"}, None)])
    assert bad[0] is None and "'x86-64' is not a valid Architecture" in bad[1]
    assert good == (["cp39-manylinux_x86_64"], None)  # the next job in the same process is unaffected


def test_shell_copies_of_the_tools_steps_are_named(releases, dist_copy, cibw):
    modern = release(releases, "2.0.0")
    job_id = "torch-2_13_0-cpu-x86_64"

    def shell_copies(jobs):
        env = build_env(jobs[job_id])
        env["CIBW_REPAIR_WHEEL_COMMAND"] = "auditwheel repair --exclude 'libtorch*' -w {dest_dir} {wheel}"
        env["CIBW_BEFORE_TEST"] = "pip install {project}/native/runtime"
        for step in jobs["perseus-common"]["steps"]:
            if "wheel common" in (step.get("run") or ""):
                step["run"] = "python -m build --wheel --outdir mirror native/runtime"

    edit_workflow(dist_copy, modern, shell_copies)
    report = run_release(modern, dist_copy, None)
    found = {(f.subject, f.message.split(" ", 1)[0]) for f in report.errors if f.rule == "tool-step"}
    assert found == {(job_id, "CIBW_REPAIR_WHEEL_COMMAND"), (job_id, "CIBW_BEFORE_TEST"), ("perseus-common", "the")}
