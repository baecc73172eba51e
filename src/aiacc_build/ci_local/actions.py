"""The fixed local stand-ins of the workflow's `uses:` actions (workflow.STANDIN_ACTIONS).

- checkout: the repository's files as git sees them (tracked, and untracked ones it does not
  ignore) copied into the job's workspace: what a push would carry, not the ignored build outputs.
- setup-python: a fresh venv of the requested minor version (the pyenv interpreter of this
  machine) put first on PATH, as the hosted tool cache does on a runner.
- upload-artifact / download-artifact: a folder per artifact under the run's artifacts/.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..wheels.toolchain import find_interpreter
from ..errors import ConfigurationError
from .workflow import Step


class StepFailed(Exception):
    """A step of a job failed: its job fails, the run goes on with jobs that do not need it."""


@dataclass
class JobContext:
    workspace: Path
    artifacts: Path
    path_prefix: list[str] = field(default_factory=list)  # folders put first on PATH (setup-python)


def checkout(repo_root: Path, workspace: Path) -> int:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo_root, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    count = 0
    for rel in filter(None, listed):
        source = repo_root / rel
        if not source.is_file():  # deleted in the work tree
            continue
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
        count += 1
    return count


def setup_python(version: str, context: JobContext, venv_dir: Path) -> str:
    interpreter = find_interpreter(version)
    if interpreter is None:
        raise StepFailed(f"setup-python: no Python {version} on this machine (pyenv versions)")
    subprocess.run([str(interpreter.executable), "-m", "venv", str(venv_dir)], check=True, capture_output=True)
    context.path_prefix.insert(0, str(venv_dir / "bin"))
    return f"Python {interpreter.version} (venv {venv_dir})"


def upload_artifact(step: Step, context: JobContext, cwd: Path) -> str:
    name, path = step.with_.get("name", "artifact"), step.with_.get("path", "")
    source = cwd / path
    files = [p for p in source.rglob("*") if p.is_file()] if source.is_dir() else ([source] if source.is_file() else [])
    if not files:
        if step.with_.get("if-no-files-found", "warn") == "error":
            raise StepFailed(f"upload-artifact {name}: no files at {path}")
        return f"{name}: nothing to upload"
    target = context.artifacts / name
    if target.exists():
        raise StepFailed(f"upload-artifact: an artifact named {name} exists already (names are unique in a run)")
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        target.mkdir(parents=True)
        shutil.copy2(source, target / source.name)
    return f"{name}: {len(files)} file(s) from {path}"


def download_artifact(step: Step, context: JobContext, cwd: Path) -> str:
    name = step.with_.get("name")
    dest = cwd / step.with_.get("path", ".")
    if name is not None:
        source = context.artifacts / name
        if not source.is_dir():
            raise StepFailed(f"download-artifact: no artifact named {name} (was its job run?)")
        shutil.copytree(source, dest, dirs_exist_ok=True)
        return f"{name} -> {step.with_.get('path', '.')}"
    merge = step.with_.get("merge-multiple", "false") == "true"
    names = sorted(p.name for p in context.artifacts.iterdir()) if context.artifacts.is_dir() else []
    for each in names:
        shutil.copytree(context.artifacts / each, dest if merge else dest / each, dirs_exist_ok=True)
    return f"{len(names)} artifact(s) ({', '.join(names)}) -> {step.with_.get('path', '.')}{' merged' if merge else ''}"


def run_action(step: Step, context: JobContext, repo_root: Path, cwd: Path) -> str:
    """Run a `uses:` step's stand-in; returns a one-line description."""
    assert step.uses is not None
    action = step.uses.split("@", 1)[0]
    if action == "actions/checkout":
        return f"{checkout(repo_root, context.workspace)} files of {repo_root}"
    if action == "actions/setup-python":
        version = step.with_.get("python-version")
        if not version:
            raise ConfigurationError("setup-python without python-version: run-local needs the version")
        return setup_python(version, context, context.workspace.parent / f"python-{version}")
    if action == "actions/upload-artifact":
        return upload_artifact(step, context, cwd)
    if action == "actions/download-artifact":
        return download_artifact(step, context, cwd)
    raise ConfigurationError(f"no stand-in for {step.uses}")  # workflow.py refuses these before any step runs
