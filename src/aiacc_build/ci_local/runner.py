"""Run the rendered workflow's jobs here, from the YAML: `run:` steps in bash as a runner runs them,
`uses:` steps by their stand-ins (actions.py), the builder-image step by a locally made builder
(builder.py), cibuildwheel with the job's own selector and environment in that image.

What differs from a runner, each said in the job's result (`local`): a cell job builds only the
identifiers of its local cells (CIBW_BUILD narrowed); the index job expects only the wheels of the
jobs run here; cibuildwheel runs on this machine's Docker engine with the host network.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import naming
from ..model import Cell, CellGroup, ReleaseInfo, group_cells
from .actions import JobContext, StepFailed, run_action
from .workflow import Job, Step

Say = Callable[[str], None]
STEP_TIMEOUT_S = 3600


@dataclass
class StepResult:
    label: str
    status: str  # ok | failed | not run
    seconds: float = 0.0
    detail: str = ""


@dataclass
class JobResult:
    id: str
    name: str
    status: str  # passed | failed | skipped | not run here
    seconds: float = 0.0
    reason: str = ""
    local: list[str] = field(default_factory=list)  # how this run differs from the runner's, said plainly
    steps: list[StepResult] = field(default_factory=list)
    log: str | None = None


def is_cibuildwheel(step: Step) -> bool:
    return step.run is not None and "cibuildwheel" in step.run and "--output-dir" in step.run


def is_builder_bake(step: Step) -> bool:
    return step.run is not None and "docker buildx bake" in step.run


def narrow_expected(run: str, keep: set[str]) -> str:
    """The index job's `<<'EXPECTED'` list, keeping only `keep`."""
    head, sep, rest = run.partition("<<'EXPECTED'\n")
    if not sep:
        return run
    body, end, tail = rest.partition("\nEXPECTED")
    lines = [line for line in body.splitlines() if line.strip() in keep]
    return head + sep + "\n".join(lines) + end + tail


@dataclass
class LocalPlan:
    """Which cells are local, and so which identifiers each cell job builds here."""

    release: ReleaseInfo
    cells: tuple[Cell, ...]
    local_keys: frozenset[str]
    deferred: dict[str, str]  # cell key -> why it is not built here

    def groups(self) -> dict[str, CellGroup]:
        return {naming.ci_job_id(g): g for g in group_cells(self.cells)}

    def local_identifiers(self, job_id: str) -> list[str]:
        group = self.groups().get(job_id)
        if group is None:
            return []
        return sorted({naming.cibw_identifier(c) for c in group.cells if c.key in self.local_keys})

    def why_not_here(self, job_id: str) -> str:
        group = self.groups().get(job_id)
        if group is None:
            return "no cell group of the release has this job id"
        reasons = sorted({self.deferred.get(c.key, "not selected") for c in group.cells})
        return "; ".join(reasons)

    def wheel_paths(self, job_ids: list[str]) -> set[str]:
        groups = self.groups()
        return {naming.wheel_path(c) for j in job_ids for c in groups[j].cells if c.key in self.local_keys}


class LocalRunner:
    def __init__(
        self,
        plan: LocalPlan,
        repo_root: Path,
        work_dir: Path,
        docker_host: Callable[[], str],
        build_builder: Callable[[Path, str, Say], str],
        say: Say,
    ):
        self.plan = plan
        self.repo_root = repo_root
        self.work_dir = work_dir
        self.docker_host = docker_host  # starts the engine on first use
        self.build_builder = build_builder  # (bake dir, target, log line) -> description
        self.say = say
        self.artifacts = work_dir / "artifacts"

    # -- the run --------------------------------------------------------------------------------
    def run(self, jobs: list[Job]) -> list[JobResult]:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        results: dict[str, JobResult] = {}
        for job in jobs:
            results[job.id] = self._job(job, results)
        return list(results.values())

    def _job(self, job: Job, done: dict[str, JobResult]) -> JobResult:
        result = JobResult(id=job.id, name=job.name, status="passed")
        if job.local_note:
            result.local.append(job.local_note)
        if job.not_here:
            result.status, result.reason = "not run here", job.not_here
            return result
        build_steps = [s for s in job.steps if is_cibuildwheel(s)]
        if build_steps:
            identifiers = self.plan.local_identifiers(job.id)
            if not identifiers:
                result.status, result.reason = "not run here", self.plan.why_not_here(job.id)
                return result
            group = self.plan.groups()[job.id]
            every = sorted({naming.cibw_identifier(c) for c in group.cells})
            if identifiers != every:
                result.local.append(f"CIBW_BUILD narrowed to the local cells: {' '.join(identifiers)} (the job builds {' '.join(every)})")
        failed = [n for n in job.needs if done[n].status in ("failed", "skipped")]
        if failed:
            result.status, result.reason = "skipped", f"needs {', '.join(failed)}, which did not pass"
            return result
        not_here = [n for n in job.needs if done[n].status == "not run here"]
        if not_here:
            result.local.append(f"runs without {len(not_here)} job(s) not run here: {', '.join(not_here)}")
        started = time.monotonic()
        job_dir = self.work_dir / "jobs" / job.id
        workspace = job_dir / "ws"
        workspace.mkdir(parents=True, exist_ok=True)
        context = JobContext(workspace=workspace, artifacts=self.artifacts)
        log_path = self.work_dir / "logs" / f"{job.id}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        result.log = str(log_path)
        self.say(f"job {job.id}: {job.name}")
        with log_path.open("w") as log:
            for step in job.steps:
                if result.status == "failed":
                    result.steps.append(StepResult(step.label, "not run"))
                    continue
                step_started = time.monotonic()
                try:
                    detail = self._step(job, step, context, log, result, done)
                    status = "ok"
                except StepFailed as exc:
                    detail, status = str(exc), "failed"
                    result.status, result.reason = "failed", f"step '{step.label}': {exc}"
                seconds = time.monotonic() - step_started
                result.steps.append(StepResult(step.label, status, seconds, detail))
                log.write(f"\n### {status}: {step.label} ({seconds:.1f}s) {detail}\n")
                log.flush()
                self.say(f"  {status:6} {step.label} ({seconds:.0f}s){': ' + detail if detail and status == 'ok' else ''}")
                if status == "failed":
                    self.say(f"         {detail.splitlines()[0] if detail else ''} (log: {log_path})")
        result.seconds = time.monotonic() - started
        return result

    # -- one step -------------------------------------------------------------------------------
    def _step(self, job: Job, step: Step, context: JobContext, log, result: JobResult, done: dict[str, JobResult]) -> str:
        cwd = context.workspace / (step.working_directory or ".")
        if step.uses is not None:
            return run_action(step, context, self.repo_root, cwd)
        assert step.run is not None
        if is_builder_bake(step):
            from .builder import bake_target_of

            target = bake_target_of(step.run)
            description = self.build_builder(cwd, target, lambda line: log.write(line + "\n"))
            result.local.append(f"builder image: {description}")
            return description
        run = step.run
        env = self._env(job, step, context)
        if is_cibuildwheel(step):
            identifiers = self.plan.local_identifiers(job.id)
            env["CIBW_BUILD"] = " ".join(identifiers)
            env["CIBW_CONTAINER_ENGINE"] = "docker; create_args: --network=host"
            env["DOCKER_HOST"] = self.docker_host()
            result.local.append("cibuildwheel on this machine's Docker engine (host network, the host mounted at /host)")
        if job.id == "index" and "<<'EXPECTED'" in run:
            ran = [j for j, r in done.items() if r.status == "passed" and self.plan.groups().get(j) is not None]
            keep = self.plan.wheel_paths(ran) | {naming.common_wheel_path(self.plan.release)}
            run = narrow_expected(run, keep)
            result.local.append(f"expected wheels narrowed to those of the jobs run here: {', '.join(sorted(keep))}")
        log.write(f"$ {run}\n")
        log.flush()
        # its own process group: a step stopped (timeout, Ctrl-C) takes its children along
        proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run],
            cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            proc.wait(timeout=STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise StepFailed(f"ran longer than {STEP_TIMEOUT_S} s") from None
        except BaseException:
            _stop(proc)
            raise
        if proc.returncode != 0:
            raise StepFailed(f"exit {proc.returncode}{_tail(Path(log.name))}")
        return ""

    def _env(self, job: Job, step: Step, context: JobContext) -> dict[str, str]:
        base = {
            k: v for k, v in os.environ.items()
            if not k.startswith(("CIBW_", "GITHUB_", "AIACC_")) and k not in ("VIRTUAL_ENV", "PYTHONPATH", "DOCKER_HOST")
        }
        # PIP_RETRIES=0: the vendor indexes the jobs name (download.pytorch.org) have no route from this
        # machine; pip skips them at once instead of retrying each dependency five times
        env = {**base, "PIP_RETRIES": "0", **job.env, **step.env, "CI": "true", "GITHUB_WORKSPACE": str(context.workspace)}
        env["PATH"] = os.pathsep.join([*context.path_prefix, base.get("PATH", "")])
        return env


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _tail(log: Path, lines: int = 15) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return "; its log ends:\n" + "\n".join(text)
