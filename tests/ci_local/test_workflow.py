"""run-local's cheap part: the rendered workflow parsed into jobs (order by `needs`), unknown actions
and expressions refused before anything runs, the stand-ins of the artifact actions, and a runner
executing plain `run:` jobs for real (bash, artifacts, a failed need skips its dependants)."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from aiacc_build import naming
from aiacc_build.ci_local.runner import LocalPlan, LocalRunner, narrow_expected
from aiacc_build.ci_local.workflow import STANDIN_ACTIONS, WorkflowError, parse_workflow
from aiacc_build.render.ci import render_ci

from render.sample_releases import MODERN, modern_cells

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def _rendered():
    return yaml.safe_load(render_ci(MODERN, modern_cells()).content)


def test_rendered_workflow_parses_into_jobs_after_what_they_need():
    jobs = parse_workflow(_rendered())
    order = [j.id for j in jobs]
    assert order[0] == "perseus-common"
    assert order.index("index") > max(order.index(n) for n in jobs[order.index("index")].needs)
    assert order[-1] == "install-check"
    uses = {s.uses for j in jobs for s in j.steps if s.uses}
    assert uses == set(STANDIN_ACTIONS)  # every action the workflow uses has a stand-in, and no more
    build = next(j for j in jobs if j.id == "torch-2_13_0-cpu-x86_64")
    (step,) = [s for s in build.steps if s.run and "cibuildwheel --output-dir" in s.run]
    assert step.env["CIBW_BUILD"] == "cp311-manylinux_x86_64 cp312-manylinux_x86_64"


def test_an_action_without_a_stand_in_fails_the_run_before_any_step():
    data = _rendered()
    data["jobs"]["index"]["steps"].insert(0, {"uses": "actions/cache@v4", "with": {"path": "x"}})
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(data)
    assert "'actions/cache@v4'" in str(refused.value) and "actions/checkout@v5" in str(refused.value)
    data = _rendered()
    data["jobs"]["index"]["steps"][0]["uses"] = "actions/checkout@v4"  # another version is another action
    with pytest.raises(WorkflowError):
        parse_workflow(data)


def test_expressions_unknown_needs_and_cycles_are_refused():
    with pytest.raises(WorkflowError, match="expression"):
        parse_workflow({"jobs": {"a": {"steps": [{"run": "echo ${{ github.sha }}"}]}}})
    with pytest.raises(WorkflowError, match="needs nope"):
        parse_workflow({"jobs": {"a": {"needs": "nope", "steps": [{"run": "true"}]}}})
    with pytest.raises(WorkflowError, match="cycle"):
        parse_workflow({"jobs": {"a": {"needs": "b", "steps": []}, "b": {"needs": ["a"], "steps": []}}})


def test_the_index_jobs_expected_list_is_narrowed_to_what_ran():
    index = next(j for j in parse_workflow(_rendered()) if j.id == "index")
    (check,) = [s for s in index.steps if s.run and "<<'EXPECTED'" in s.run]
    keep = {"cpu/perseus_torch-2.0.0+2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl", naming.common_wheel_path(MODERN)}
    narrowed = narrow_expected(check.run, keep)
    body = narrowed.split("<<'EXPECTED'\n", 1)[1].split("\nEXPECTED", 1)[0]
    assert set(body.splitlines()) == keep
    assert narrowed.endswith('exit "$missing"\n')


def _plan(local_keys=()):
    cells = modern_cells()
    return LocalPlan(release=MODERN, cells=cells, local_keys=frozenset(local_keys), deferred={c.key: "framework not on this disk" for c in cells})


def _git_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "tracked.txt").write_text("in git\n")
    (repo / ".gitignore").write_text("ignored/\n")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "out.bin").write_text("build output\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "tracked.txt", ".gitignore"], cwd=repo, check=True)
    return repo


def test_runner_runs_steps_passes_artifacts_and_skips_after_a_failure(tmp_path):
    workflow = {
        "jobs": {
            "make": {"steps": [
                {"uses": "actions/checkout@v5"},
                {"name": "write", "run": "test -f tracked.txt && test ! -e ignored\nmkdir out && echo hello > out/a.txt",
                 "env": {"GREETING": "hi"}},
                {"uses": "actions/upload-artifact@v6", "with": {"name": "made", "path": "out/", "if-no-files-found": "error"}},
            ]},
            "use": {"needs": "make", "steps": [
                {"uses": "actions/download-artifact@v7", "with": {"name": "made", "path": "got/"}},
                {"name": "read", "run": "grep -q hello got/a.txt"},
            ]},
            "broken": {"steps": [{"name": "fails", "run": "echo about to fail; false"}, {"name": "never", "run": "true"}]},
            "after-broken": {"needs": ["broken"], "steps": [{"run": "true"}]},
            "torch-2_13_0-cpu-x86_64": {"steps": [{"name": "build", "run": "python -m cibuildwheel --output-dir w p"}]},
        }
    }
    lines: list[str] = []
    runner = LocalRunner(_plan(), _git_repo(tmp_path), tmp_path / "work", lambda: "unix:///nowhere", lambda *a: "", lines.append)
    results = {r.id: r for r in runner.run(parse_workflow(workflow))}
    assert results["make"].status == "passed" and results["use"].status == "passed"
    assert results["broken"].status == "failed" and "exit 1" in results["broken"].reason
    assert [s.status for s in results["broken"].steps] == ["failed", "not run"]
    assert "about to fail" in (tmp_path / "work" / "logs" / "broken.log").read_text()
    assert results["after-broken"].status == "skipped"
    # a cell job none of whose cells is local gets no run, with the planner's reason
    assert results["torch-2_13_0-cpu-x86_64"].status == "not run here"
    assert "framework not on this disk" in results["torch-2_13_0-cpu-x86_64"].reason
    assert any("ok" in line and "write" in line for line in lines)


def test_a_cell_job_with_local_cells_builds_only_those(tmp_path):
    keys = [c.key for c in modern_cells() if naming.cibw_identifier(c) == "cp311-manylinux_x86_64" and c.framework.value == "torch"
            and c.cuda is None and c.framework_version == "2.13.0"]
    plan = _plan(keys)
    assert plan.local_identifiers("torch-2_13_0-cpu-x86_64") == ["cp311-manylinux_x86_64"]
    assert plan.local_identifiers("torch-2_13_0-cuda130-x86_64") == []
