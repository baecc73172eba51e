"""`check ci`: each rendered workflow's jobs against the release's cells, its cibuildwheel and bake file.

What it proves per job: the selector (CIBW_BUILD + CIBW_ARCHS_LINUX + the package's pyproject)
makes the release's own cibuildwheel version list exactly the job's cells' identifiers; the builder
image the job uses is a target of the rendered bake file, for the job's CUDA and platform; the job
installs the release's cibuildwheel version; the index job waits for every job and expects every
cell's wheel. actionlint and the GitHub workflow schema run in tests/render/test_linters.py.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..render.ci import caffe_jobs
from .. import naming
from ..adapters import adapter_for
from ..model import Cell, CellGroup, group_cells
from ..paths import REPO_ROOT
from ..render.docker import BAKE_FILE
from .cibw import CibuildwheelEnv, Selection, build_identifiers, ensure_cibuildwheel
from .findings import WARNING, CheckReport, Finding

COMMON_JOB = "perseus-common"
INDEX_JOB = "index"
INSTALL_CHECK_JOB = "install-check"
# `pip install cibuildwheel==X` or the tool's own `aiacc-build ci install-cibuildwheel X`
_PIN = re.compile(r"(?:cibuildwheel==|install-cibuildwheel )([0-9][0-9A-Za-z.+!-]*)")
_PLATFORMS = {"x86_64": "linux/amd64", "aarch64": "linux/arm64"}


@dataclass(frozen=True)
class BuildStep:
    env: dict[str, str]  # workflow + job + step env, as the step sees it
    package_dir: str
    run: str


def _load_yaml(path: Path) -> Any:
    # GitHub's `on:` must stay a string key (YAML 1.1 reads a bare `on` as True).
    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {k: [r for r in v if r[0] != "tag:yaml.org,2002:bool"] for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)


def _build_step(workflow: dict, job: dict) -> BuildStep | None:
    for step in job.get("steps", []):
        run = step.get("run") or ""
        if "cibuildwheel" in run and "--output-dir" in run:
            env = {**(workflow.get("env") or {}), **(job.get("env") or {}), **(step.get("env") or {})}
            args = shlex.split(run)
            return BuildStep({k: str(v) for k, v in env.items()}, args[-1], run)
    return None


def _pins(job: dict) -> list[str]:
    return [m for step in job.get("steps", []) for m in _PIN.findall(step.get("run") or "")]


def _bake_target_in(job: dict) -> str | None:
    for step in job.get("steps", []):
        run = step.get("run") or ""
        if "buildx bake" in run:
            return shlex.split(run.strip().splitlines()[-1])[-1]
    return None


class ReleaseCiChecker:
    def __init__(self, release, dist: Path, cibw: CibuildwheelEnv | None, report: CheckReport, repo_root: Path = REPO_ROOT):
        self.info = release.info
        self.cells: tuple[Cell, ...] = tuple(release.cells)
        self.out = dist / self.info.version
        self.cibw = cibw
        self.report = report
        self.repo_root = repo_root
        self.file = f"{self.info.version}/ci/{naming.ci_workflow_filename(self.info)}"
        self.selections: list[tuple[str, list[str], BuildStep, Path | None]] = []
        self.absent_packages: dict[str, list[str]] = {}

    def fail(self, rule: str, subject: str, message: str, severity: str = "error") -> None:
        self.report.findings.append(Finding(self.file, rule, subject, message, severity))

    def run(self) -> None:
        path = self.out / "ci" / naming.ci_workflow_filename(self.info)
        if not path.is_file():
            self.fail("missing-workflow", path.name, f"no workflow at {path}: run `aiacc-build render`")
            return
        workflow = _load_yaml(path)
        bake_path = self.out / BAKE_FILE
        bake = json.loads(bake_path.read_text(encoding="utf-8")) if bake_path.is_file() else {"target": {}}
        self.report.count("workflows")
        jobs: dict[str, dict] = workflow.get("jobs") or {}
        all_groups = group_cells(self.cells)
        groups = {naming.ci_job_id(g): g for g in all_groups if adapter_for(g.framework).binding_missing is None}
        unbuildable = {naming.ci_job_id(g): g for g in all_groups if adapter_for(g.framework).binding_missing is not None}
        for job_id in sorted(set(unbuildable) & set(jobs)):
            reason = adapter_for(unbuildable[job_id].framework).binding_missing
            self.fail("job-without-binding", job_id, f"this job must fail: {reason}")
        caffe = {j.id for j in caffe_jobs(self.info, self.cells)}  # the release's Caffe artifacts, per platform
        for job_id in sorted(caffe - set(jobs)):
            self.fail("missing-job", job_id, "the release's Caffe artifacts of this platform have no CI job")
        for job_id in sorted(set(groups) - set(jobs)):
            self.fail("missing-job", job_id, f"cells {', '.join(c.key for c in groups[job_id].cells)} have no CI job")
        common_runs = "\n".join(str(s.get("run", "")) for s in (jobs.get(COMMON_JOB) or {}).get("steps", []))
        if f"aiacc-build wheel common --release {self.info.version} " not in common_runs:
            self.fail("tool-step", COMMON_JOB, f"the {COMMON_JOB} job must build it with `aiacc-build wheel common --release {self.info.version}`")
        for job_id, job in jobs.items():
            if job_id in (COMMON_JOB, INDEX_JOB) or job_id in caffe:
                continue
            if job_id == INSTALL_CHECK_JOB:
                self._install_check(job)
                continue
            group = groups.get(job_id)
            if group is None:
                if job_id not in unbuildable:
                    self.fail("unexpected-job", job_id, "no cell group of the release has this job id")
                continue
            self.report.count("jobs")
            self._job(job_id, job, group, workflow, bake)
        self._index(jobs, groups, caffe)
        self._run_selections()
        self._report_absent_packages()

    def _install_check(self, job: dict) -> None:
        """The install-check job runs the release's install script on the mirror the index job made."""
        needs = job.get("needs")
        if (needs if isinstance(needs, list) else [needs]) != [INDEX_JOB]:
            self.fail("install-check-needs", INSTALL_CHECK_JOB, f"needs {needs!r}; it must run after the index job alone")
        commands = "\n".join(str(step.get("run", "")) for step in job.get("steps", []))
        if naming.INSTALL_SCRIPT_NAME not in commands:
            self.fail("install-check-script", INSTALL_CHECK_JOB, f"no step runs {naming.INSTALL_SCRIPT_NAME}")

    def _job(self, job_id: str, job: dict, group: CellGroup, workflow: dict, bake: dict) -> None:
        pins = _pins(job)
        if pins != [self.info.cibuildwheel]:
            self.fail("cibuildwheel-pin", job_id, f"installs cibuildwheel {', '.join(pins) or '(unpinned)'}; release {self.info.version} declares {self.info.cibuildwheel}")
        step = _build_step(workflow, job)
        if step is None:
            self.fail("no-build-step", job_id, "no step runs `cibuildwheel --output-dir ...`")
            return
        self._selector(job_id, group, step)
        self._builder(job_id, job, group, step, bake)
        self._tool_steps(job_id, step)

    def _tool_steps(self, job_id: str, step: BuildStep) -> None:
        """Repair, perseus-common and the self-test are the build tool's own steps (one implementation
        with the local build), for this release: never a shell copy such as a second exclusion list."""
        version = self.info.version
        wanted = {
            "CIBW_REPAIR_WHEEL_COMMAND": f"aiacc-build wheel repair --release {version} ",
            "CIBW_BEFORE_TEST": f"aiacc-build wheel common --release {version} ",
            "CIBW_TEST_COMMAND": f"aiacc-build wheel selftest --release {version} ",
        }
        for key, command in wanted.items():
            if command not in step.env.get(key, ""):
                self.fail("tool-step", job_id, f"{key} must run `{command.strip()} ...` (it is {step.env.get(key, '')!r})")

    def _selector(self, job_id: str, group: CellGroup, step: BuildStep) -> None:
        package = self.repo_root / step.package_dir
        has_project = (package / "pyproject.toml").is_file()
        if not has_project:
            self.absent_packages.setdefault(step.package_dir, []).append(job_id)
        expected = sorted(naming.cibw_identifier(c) for c in group.cells)
        self.selections.append((job_id, expected, step, package if has_project else None))

    def _run_selections(self) -> None:
        """cibuildwheel (the release's version) once for all jobs, then compare with the cells."""
        if self.cibw is None:
            return
        cibw = self.cibw
        answers = build_identifiers(cibw, [Selection(step.env, package) for _, _, step, package in self.selections])
        for (job_id, expected, step, _), (listed, error) in zip(self.selections, answers):
            if error is not None:
                self.fail("selector", job_id, f"cibuildwheel {cibw.version} rejects the job's options: {error}")
                continue
            self.report.count("identifiers", len(listed))
            missing, extra = sorted(set(expected) - set(listed)), sorted(set(listed) - set(expected))
            if missing or extra:
                parts = []
                if missing:
                    parts.append(f"does not build {', '.join(missing)}")
                if extra:
                    parts.append(f"also builds {', '.join(extra)}")
                self.fail(
                    "selector",
                    job_id,
                    f"with CIBW_BUILD={step.env.get('CIBW_BUILD', '')!r} cibuildwheel {cibw.version} {' and '.join(parts)} "
                    f"(the job's cells: {', '.join(expected)})",
                )

    def _report_absent_packages(self) -> None:
        for package_dir, job_ids in sorted(self.absent_packages.items()):
            self.fail(
                "package-dir",
                package_dir,
                f"{len(job_ids)} job(s) ({', '.join(job_ids[:3])}{', ...' if len(job_ids) > 3 else ''}) build {package_dir}, which has no "
                "pyproject.toml in this repository yet: they fail until it exists (their selectors were checked without the package's own options)",
                WARNING,
            )

    def _builder(self, job_id: str, job: dict, group: CellGroup, step: BuildStep, bake: dict) -> None:
        arch = group.arch.value
        image = step.env.get(f"CIBW_MANYLINUX_{arch.upper()}_IMAGE")
        wanted = naming.builder_image_tag(self.info, group.cuda, arch)
        if image != wanted:
            self.fail("builder-image", job_id, f"CIBW_MANYLINUX_{arch.upper()}_IMAGE is {image!r}; the job's builder is {wanted}")
        targets = {name: t for name, t in bake.get("target", {}).items() if image in t.get("tags", [])}
        if not targets:
            self.fail("builder-not-in-bake", job_id, f"no target of {BAKE_FILE} builds {image}")
            return
        (name, target), *_ = targets.items()
        self.report.count("builder images")
        built = _bake_target_in(job)
        if built != name:
            self.fail("builder-bake-step", job_id, f"the job bakes {built!r}, the image {image} is target {name!r}")
        cuda = (target.get("args") or {}).get("CUDA_VERSION")
        if cuda != group.cuda:
            self.fail("builder-cuda", name, f"builder target has CUDA_VERSION={cuda}, job {job_id} builds for {group.cuda or 'CPU'}")
        if target.get("platforms") != [_PLATFORMS[arch]]:
            self.fail("builder-platform", name, f"builder target is for {target.get('platforms')}, job {job_id} runs on {arch}")
        dockerfile = self.out / target.get("dockerfile", "")
        if not dockerfile.is_file():
            self.fail("builder-dockerfile", name, f"{target.get('dockerfile')} is not among the rendered files")
        environment = dict(item.split("=", 1) for item in shlex.split(step.env.get("CIBW_ENVIRONMENT", "")) if "=" in item)
        if environment.get("PERSEUS_CUDA") != naming.cuda_or_cpu(group.cuda):
            self.fail("job-cuda", job_id, f"CIBW_ENVIRONMENT sets PERSEUS_CUDA={environment.get('PERSEUS_CUDA')}, the job builds for {group.cuda or 'cpu'}")

    def _index(self, jobs: dict[str, dict], groups: dict[str, CellGroup], caffe: set[str]) -> None:
        index = jobs.get(INDEX_JOB)
        if index is None:
            self.fail("missing-job", INDEX_JOB, "no index job collects the wheels")
            return
        needs = set(index.get("needs") or [])
        missing = sorted((set(groups) | {COMMON_JOB} | caffe) - needs)
        if missing:
            self.fail("index-needs", INDEX_JOB, f"the index job does not wait for {', '.join(missing)}")
        listed: set[str] = set()
        for step in index.get("steps", []):
            run = step.get("run") or ""
            if "EXPECTED" in run:
                body = run.split("<<'EXPECTED'", 1)[-1].split("\nEXPECTED", 1)[0]
                listed = {line.strip() for line in body.splitlines() if line.strip()}
        wanted = {naming.wheel_path(c) for g in groups.values() for c in g.cells} | {naming.common_wheel_path(self.info)}
        if listed != wanted:
            gaps = sorted(wanted - listed)[:3] + sorted(listed - wanted)[:3]
            self.fail("index-expected", INDEX_JOB, f"the index job's expected wheels differ from the release's cells: {', '.join(gaps)}")


def check_ci(releases: list, dist: Path, run_cibuildwheel: bool = True, cache_dir: Path | None = None) -> CheckReport:
    start = time.perf_counter()
    report = CheckReport("ci")
    for release in releases:
        report.count("releases")
        cibw = None
        if run_cibuildwheel:
            cibw = ensure_cibuildwheel(release.info.cibuildwheel, **({"cache_dir": cache_dir} if cache_dir else {}))
            report.notes.append(f"release {release.info.version}: cibuildwheel {cibw.version} from {cibw.venv}")
            report.notes.extend(cibw.notes)
        else:
            report.notes.append(f"release {release.info.version}: selectors not run through cibuildwheel (--no-cibuildwheel)")
        ReleaseCiChecker(release, dist, cibw, report).run()
    report.seconds = time.perf_counter() - start
    return report
