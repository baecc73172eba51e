"""The rendered workflow as data: jobs in the order their `needs` allow, their steps as written.

Only what the project's workflow uses is understood; anything else (an unknown `uses:` action, a
`${{ }}` expression in a step, a `needs` that names no job) is refused before any step runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..checks.ci_check import _load_yaml
from ..errors import ConfigurationError

# The actions the rendered workflow uses, each with a fixed local stand-in (actions.py).
STANDIN_ACTIONS = (
    "actions/checkout@v5",
    "actions/setup-python@v6",
    "actions/upload-artifact@v6",
    "actions/download-artifact@v7",
)


class WorkflowError(ConfigurationError):
    """The workflow uses something run-local has no stand-in for."""


@dataclass(frozen=True)
class Step:
    index: int
    name: str
    run: str | None = None
    uses: str | None = None
    with_: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    working_directory: str | None = None

    @property
    def label(self) -> str:
        return self.name or self.uses or (self.run or "").strip().splitlines()[0]


@dataclass(frozen=True)
class Job:
    id: str
    name: str
    needs: tuple[str, ...]
    steps: tuple[Step, ...]
    env: dict[str, str] = field(default_factory=dict)
    local_note: str | None = None  # set when run-local runs another rendering of this job (said in its result)
    not_here: str | None = None  # set when run-local has nothing of this job to run here: why


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise WorkflowError(f"{where} must be a mapping, not {type(value).__name__}")
    return {str(k): "true" if v is True else "false" if v is False else str(v) for k, v in value.items()}


def _step(job_id: str, index: int, raw: dict) -> Step:
    where = f"job {job_id} step {index + 1}"
    uses, run = raw.get("uses"), raw.get("run")
    if (uses is None) == (run is None):
        raise WorkflowError(f"{where}: a step has either `run:` or `uses:`")
    if uses is not None and uses not in STANDIN_ACTIONS:
        raise WorkflowError(
            f"{where} uses {uses!r}, which has no local stand-in: run-local runs only {', '.join(STANDIN_ACTIONS)}"
        )
    step = Step(
        index=index,
        name=str(raw.get("name") or ""),
        run=None if run is None else str(run),
        uses=uses,
        with_=_strings(raw.get("with"), f"{where} with:"),
        env=_strings(raw.get("env"), f"{where} env:"),
        working_directory=raw.get("working-directory"),
    )
    texts = [step.run or "", *step.with_.values(), *step.env.values()]
    if any("${{" in text for text in texts):
        raise WorkflowError(f"{where} ({step.label}) uses a `${{{{ }}}}` expression, which run-local does not evaluate")
    return step


def parse_workflow(data: dict) -> list[Job]:
    """The jobs of a loaded workflow, ordered so that every job comes after the jobs it needs."""
    raw_jobs = data.get("jobs")
    if not isinstance(raw_jobs, dict) or not raw_jobs:
        raise WorkflowError("the workflow has no jobs")
    jobs: dict[str, Job] = {}
    for job_id, raw in raw_jobs.items():
        needs = raw.get("needs") or []
        needs = (needs,) if isinstance(needs, str) else tuple(needs)
        steps = tuple(_step(job_id, i, s) for i, s in enumerate(raw.get("steps") or []))
        jobs[job_id] = Job(id=job_id, name=str(raw.get("name") or job_id), needs=needs, steps=steps, env=_strings(raw.get("env"), f"job {job_id} env:"))
    for job in jobs.values():
        unknown = [n for n in job.needs if n not in jobs]
        if unknown:
            raise WorkflowError(f"job {job.id} needs {', '.join(unknown)}, which the workflow does not define")
    ordered: list[Job] = []
    done: set[str] = set()
    pending = list(jobs.values())
    while pending:
        ready = [j for j in pending if set(j.needs) <= done]
        if not ready:
            raise WorkflowError(f"jobs {', '.join(j.id for j in pending)} need each other in a cycle")
        for job in ready:  # in the file's order among those ready
            ordered.append(job)
            done.add(job.id)
        pending = [j for j in pending if j.id not in done]
    return ordered


def load_workflow(path: Path) -> list[Job]:
    if not path.is_file():
        raise WorkflowError(f"no workflow at {path}: render the release first (aiacc-build render --release ...)")
    return parse_workflow(_load_yaml(path))
