"""The build driver: perseus-common once, the native core once per (toolkit, compiler, build type, release),
then per cell: binding wheel -> auditwheel repair -> re-tag -> test in a fresh environment -> dist/.

The binding is a Python-free torch extension (checked on every build: its libraries import nothing of
the Python C API), so the cells of one framework build that differ only in their Python share one
binding build, keyed by the framework's C++ interface (framework_facts.py): the first cell compiles and
repairs it, the others re-tag that wheel for their Python. Every cell is still tested in its own fresh
environment.

Every step is a content-addressed cache entry (see cache.py), so a rebuild does only what its inputs
changed. CI runs the same steps through cibuildwheel in a manylinux builder image (podman with a
locally built image); on this machine the driver runs them natively with the host toolchain.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import parse_wheel_filename

from ..model import Cell, ReleaseInfo
from ..naming import common_wheel_filename, wheel_filename, wheel_path
from ..paths import DIST_DIR, NATIVE_DIR, REPO_ROOT
from .binding import BindingBuildError, BindingSpec, build_binding, ensure_binding_envs, read_binding_spec
from .cache import BuildCache
from .common import CommonWheel, build_common
from .core import CoreBuild, build_core, core_key_inputs
from .framework_facts import FrameworkFacts, facts_of_installed, facts_problem
from ..hashing import file_sha256, tree_digest
from .plan import BuildPlan, CellPlan, binding_dir
from .record import load_record, mirror_root, record_of, save_record
from ..adapters import excluded_libraries
from .glibc import broken_promise
from .repair import RepairError, wheel_platform, adopt_shared_wheel, check_metadata, repair_and_retag
from .smoke import SmokeResult, combined, smoke_test
from .toolchain import Toolchain, backend_interpreter, detect_toolchain
from .wheelinfo import python_api_imports
from ..errors import AiaccError, BuildError

# Bump when the driver changes what it puts into a wheel: every cached wheel is then rebuilt.
DRIVER_REVISION = 5  # 4: proven platform tags; 5: the declared MPI plugin parts
MPI_RECIPE_DIR = REPO_ROOT / "recipes" / "mpi"  # the MPI plugins' pinned headers
BUILD_TYPE = "Release"


@dataclass(frozen=True)
class BuildOptions:
    build_type: str = BUILD_TYPE
    jobs: int = 2
    test: bool = True


@dataclass(frozen=True)
class CellResult:
    plan: CellPlan
    path: Path  # in dist/
    sha256: str
    size: int
    fingerprint: str
    repaired_platform: str
    grafted: tuple[str, ...]
    note: str | None  # e.g. the published tag promises an older glibc than this native build needs
    reused: bool  # the wheel came from the cache
    binding_build: str | None  # key of the binding build this cell shares with the other Pythons of its
    # framework build (None: built for this cell alone, its framework's C++ interface unknown)
    core: CoreBuild | None  # None when the wheel was reused (the core was not needed)
    smoke: SmokeResult | None
    seconds: float
    steps: dict[str, float]  # seconds per step run in this build: core, build env, binding, repair, test
    toolchain: str
    facts: FrameworkFacts | None  # what the framework build was compiled with (CUDA, C++ ABI)


class FrameworkMismatchError(BuildError):
    pass


class _StepClock:
    def __init__(self, steps: dict[str, float]):
        self.steps = steps

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.steps[name] = self.steps.get(name, 0.0) + time.perf_counter() - started


@dataclass(frozen=True)
class CellFailure:
    plan: CellPlan
    error: str


@dataclass
class BuildReport:
    release: ReleaseInfo
    plan: BuildPlan
    common: CommonWheel | None = None
    results: list[CellResult] = field(default_factory=list)
    failures: list[CellFailure] = field(default_factory=list)
    cores: list[CoreBuild] = field(default_factory=list)  # cores this run needed (built or reused)
    core_builds: int = 0  # cores compiled in this run (not reused)
    seconds: float = 0.0
    record_path: Path | None = None


Progress = Callable[[str], None]


class Builder:
    def __init__(
        self,
        cache: BuildCache,
        dist_dir: Path = DIST_DIR,
        native_dir: Path = NATIVE_DIR,
        options: BuildOptions = BuildOptions(),
        progress: Progress | None = None,
    ):
        self.cache = cache
        self.dist_dir = dist_dir
        self.native_dir = native_dir
        self.options = options
        self.progress = progress or (lambda message: None)
        self._cores: dict[str, CoreBuild] = {}
        self._digests: dict[tuple[Path, frozenset[str]], str] = {}

    def _digest(self, path: Path, exclude: frozenset[str] = frozenset()) -> str:
        """Source digests, computed once per build session."""
        if (path, exclude) not in self._digests:
            self._digests[(path, exclude)] = tree_digest(path, exclude)
        return self._digests[(path, exclude)]

    # -- the release ---------------------------------------------------------------------------
    def build(self, release: ReleaseInfo, plan: BuildPlan) -> BuildReport:
        started = time.perf_counter()
        self._cores = {}
        report = BuildReport(release=release, plan=plan)
        root = mirror_root(release.version, self.dist_dir)
        self.progress(f"perseus-common {release.version}")
        report.common = build_common(release, self.cache, self.native_dir / "runtime")
        self._publish(report.common.path, root / common_wheel_filename(release), report.common.sha256)
        for cell_plan in plan.to_build:
            self.progress(f"cell {cell_plan.cell.key}")
            try:
                report.results.append(self._build_cell(cell_plan, report.common, root))
            except AiaccError as exc:  # one cell's failure must not hide the others'; a bug in this tool is no failure of a cell
                report.failures.append(CellFailure(cell_plan, f"{type(exc).__name__}: {exc}"))
        report.cores = list(self._cores.values())
        report.core_builds = sum(1 for core in report.cores if not core.reused)
        previous = load_record(release.version, self.dist_dir)
        report.record_path = save_record(record_of(report, root, previous), self.dist_dir)
        report.seconds = time.perf_counter() - started
        return report

    # -- one cell ------------------------------------------------------------------------------
    def _core_key(self, toolchain: Toolchain, release: str) -> str:
        return self.cache.key(
            "core", core_key_inputs(self.native_dir, toolchain, self.options.build_type, release, self._digest)
        )

    def _core_for(self, toolchain: Toolchain, release: ReleaseInfo) -> CoreBuild:
        key = self._core_key(toolchain, release.version)
        if key not in self._cores or not self.cache.enabled:
            self.progress(f"core for {toolchain.label}")
            self._cores[key] = build_core(
                self.native_dir,
                toolchain,
                self.options.build_type,
                release.version,
                self.cache,
                self.options.jobs,
                self._digest,
            )
        return self._cores[key]

    def _binding_inputs(self, cell: Cell, spec: BindingSpec, toolchain: Toolchain) -> dict[str, object]:
        """What every binding build depends on, shared or not."""
        return {
            "driver": DRIVER_REVISION,
            "binding": self._digest(spec.source),
            "core": self._core_key(toolchain, cell.release_version),
            "framework_build": [cell.build.requirement, cell.build.cuda_variant, cell.build.cxx11_abi],
            "toolchain": toolchain.identity,
            "build_type": self.options.build_type,
            "excluded_libraries": list(excluded_libraries()),
            # the declared parts and the pinned recipe their headers come from
            "parts": sorted(spec.adapter.declared_parts()),
            "mpi_recipe": self._digest(MPI_RECIPE_DIR),
        }

    def _shared_binding_inputs(
        self, cell: Cell, plan: CellPlan, spec: BindingSpec, toolchain: Toolchain
    ) -> dict[str, object] | None:
        """The inputs of the binding build that every Python of this framework build shares: the framework's
        C++ interface instead of its file, no interpreter. None when that interface is unknown (the
        framework file was not inspected): the cell then builds its own binding."""
        facts = plan.facts
        if facts is None or facts.interface is None:
            return None
        return {
            **self._binding_inputs(cell, spec, toolchain),
            "framework_interface": [facts.cuda, facts.cxx11_abi, facts.interface],
            "platform": sorted(t.platform for t in parse_wheel_filename(wheel_filename(cell))[3]),
        }

    def _own_binding_inputs(self, cell: Cell, plan: CellPlan, spec: BindingSpec, toolchain: Toolchain) -> dict[str, object]:
        assert plan.framework is not None and plan.interpreter is not None
        backend = backend_interpreter(plan.interpreter)
        # only where another interpreter runs the build backend (cp36): other cells keep their keys
        other_backend = {"backend_python": backend.version} if backend != plan.interpreter else {}
        return {
            **other_backend,
            **self._binding_inputs(cell, spec, toolchain),
            "cell": cell.key,
            "framework_file": plan.framework.identity,
            "python": plan.interpreter.version,
            "published_name": wheel_filename(cell),
        }

    def _compile(
        self, plan: CellPlan, spec: BindingSpec, toolchain: Toolchain, path: Path, meta: dict[str, object], clock: _StepClock
    ) -> CoreBuild:
        """Build, repair and name the binding wheel of `plan`'s cell into `path`; returns the core it used."""
        cell = plan.cell
        assert plan.framework is not None and plan.interpreter is not None
        with clock("core"):
            core = self._core_for(toolchain, cell.release)
        with clock("build env"):
            envs = ensure_binding_envs(plan.interpreter, plan.framework, spec, self.cache)
        facts = facts_of_installed(cell.framework, envs.framework.site_packages)
        if facts is not None:
            problem = facts_problem(cell, facts, plan.framework.filename)
            if problem:  # the planner could not inspect the file (offline): never build against it
                raise FrameworkMismatchError(problem)
            meta["framework_facts"] = {"cuda": facts.cuda, "cxx11_abi": facts.cxx11_abi, "interface": facts.interface}
        meta["backend_python"] = envs.backend_python
        self.progress(f"binding {cell.framework.value} for {cell.key}")
        with clock("binding"):
            raw = build_binding(
                cell, spec, envs, core, toolchain, self.options.build_type, self.cache, path / "raw", self.options.jobs
            )
        python_api = python_api_imports(raw)
        if python_api:
            raise BindingBuildError(
                f"{raw.name}: its libraries import the Python C API ({python_api}); perseus bindings are "
                f"Python-free torch extensions, which is what lets one build serve every Python (and a cp36 cell "
                f"be built by a newer interpreter): move that code into the Python package"
            )
        with clock("repair"):
            repaired = repair_and_retag(raw, path / "repaired", wheel_filename(cell), spec.library_path(envs.framework))
        # the release's name, or the same with the platform tag the build proved (repair.honest_platform)
        repaired.wheel.replace(path / repaired.wheel.name)
        shutil.rmtree(path / "raw")
        shutil.rmtree(path / "repaired")
        meta.update(
            wheel=repaired.wheel.name,
            repaired_platform=repaired.repaired_platform,
            grafted=list(repaired.grafted),
            retagged=repaired.retagged,
            note=repaired.note,
        )
        return core

    def _build_cell(self, plan: CellPlan, common: CommonWheel, root: Path) -> CellResult:
        started = time.perf_counter()
        cell = plan.cell
        assert plan.framework is not None and plan.interpreter is not None
        toolchain = detect_toolchain(cell.cuda)
        spec = read_binding_spec(binding_dir(cell.framework, self.native_dir))
        shared_inputs = self._shared_binding_inputs(cell, plan, spec, toolchain)
        if shared_inputs is None:
            inputs = self._own_binding_inputs(cell, plan, spec, toolchain)
        else:
            inputs = {
                "driver": DRIVER_REVISION,
                "binding_build": self.cache.key("binding", shared_inputs),
                "cell": cell.key,
                "published_name": wheel_filename(cell),
            }
        used_core: list[CoreBuild] = []
        steps: dict[str, float] = {}
        clock = _StepClock(steps)

        def compile_into(path: Path, meta: dict[str, object]) -> None:
            used_core.append(self._compile(plan, spec, toolchain, path, meta, clock))

        def make(path: Path, meta: dict[str, object]) -> None:
            if shared_inputs is None:
                compile_into(path, meta)
                final = path / str(meta["wheel"])
            else:
                shared = self.cache.ensure("binding", shared_inputs, compile_into)
                with clock("retag"):
                    final = adopt_shared_wheel(shared.path / str(shared.meta["wheel"]), cell, path)
                meta.update({k: v for k, v in shared.meta.items() if k != "wheel"}, binding_build=shared.key,
                            wheel=final.name)
            check_metadata(final, cell)
            broken = broken_promise(final)
            if broken:  # the tag must never promise a glibc the shared objects break
                raise RepairError(broken)
            meta["sha256"] = file_sha256(final)

        entry = self.cache.ensure("wheel", inputs, make)
        wheel = entry.path / str(entry.meta["wheel"])
        recorded = entry.meta.get("framework_facts")
        facts = FrameworkFacts(**recorded) if recorded else plan.facts
        sha = str(entry.meta["sha256"])
        smoke = None
        if self.options.test:
            self.progress(f"test {cell.key} in a fresh environment")
            with clock("test"):
                runs = [(plan.interpreter, plan.framework), *plan.also_tested]
                smoke = combined([smoke_test(cell, wheel, sha, common, i, f, self.cache) for i, f in runs])
        target = root / wheel_path(cell, wheel_platform(wheel.name))
        self._publish(wheel, target, sha)
        # one wheel per cell in dist/: the same cell under another platform tag (an earlier build) goes
        stem = wheel_filename(cell)[: -len(wheel_platform(wheel_filename(cell))) - len(".whl")]
        for other in target.parent.glob(f"{stem}*_{cell.arch.value}.whl"):
            if other != target and other.name[len(stem):].count("-") == 0:
                other.unlink()
        return CellResult(
            plan=plan,
            path=target,
            sha256=sha,
            size=target.stat().st_size,
            fingerprint=entry.key,
            repaired_platform=str(entry.meta["repaired_platform"]),
            grafted=tuple(entry.meta.get("grafted", [])),
            note=entry.meta.get("note"),  # type: ignore[arg-type]
            reused=entry.hit,
            binding_build=entry.meta.get("binding_build"),  # type: ignore[arg-type]
            core=used_core[0] if used_core else None,
            smoke=smoke,
            seconds=time.perf_counter() - started,
            steps=steps,
            toolchain=toolchain.label,
            facts=facts,
        )

    @staticmethod
    def _publish(source: Path, target: Path, sha256: str) -> None:
        """Copy into dist/ unless the same bytes are already there."""
        if target.is_file() and target.stat().st_size == source.stat().st_size and file_sha256(target) == sha256:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".part")
        shutil.copyfile(source, tmp)
        tmp.replace(target)
