"""Build planning: which cells of a release are built on this machine now, and why the others are not.

A cell is buildable here when its binding exists in native/bindings/, the machine has its architecture,
an interpreter for its build Python, the real nvcc of exactly its CUDA (or it is a CPU cell: a toolkit
under /usr/local, or one `aiacc-build toolkit fetch` provisioned into the build cache), and the
exact framework build (version + CUDA variant + C++ ABI) exists for that Python: its local label and,
read from the file itself, the CUDA it was compiled with and its C++ ABI must be the cell's. Of those, the default
selection builds the cells whose framework already lies on this disk (fast: what CI runs); a selection
(`--cells`) widens it. Every other cell is deferred to CI, with the reason and the framework's download
size where the registry tells it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from packaging.version import Version

from .. import hints
from ..adapters import adapter_for
from ..model import Cell, Framework
from ..naming import builder_image_tag
from ..paths import NATIVE_DIR
from .framework_facts import FrameworkFacts, facts_problem, read_facts
from .frameworks import FrameworkArtifact, pinned, resolve_framework
from ..registry import RegistryClient
from ..toolkits import TOOLKITS
from .toolchain import CudaCompiler, Interpreter, find_cuda_compiler, find_interpreter, machine_arch


class CellStatus(str, Enum):
    BUILD = "build"
    DEFERRED = "deferred"


@dataclass(frozen=True)
class CellPlan:
    cell: Cell
    status: CellStatus
    reason: str
    buildable_here: bool  # True when only the selection keeps it from being built
    build_python: str | None = None  # the interpreter's minor version the binding is built with
    interpreter: Interpreter | None = None
    cuda_compiler: CudaCompiler | None = None
    framework: FrameworkArtifact | None = None
    facts: FrameworkFacts | None = None  # read from the framework file (None: not read, or no reader)

    @property
    def download_size(self) -> int | None:
        """Bytes to fetch before this cell can build: 0 when its framework lies on this disk."""
        if self.framework is None:
            return None
        return 0 if self.framework.is_local else self.framework.size


@dataclass(frozen=True)
class BuildPlan:
    release: str
    cells: tuple[CellPlan, ...]

    @property
    def to_build(self) -> tuple[CellPlan, ...]:
        return tuple(p for p in self.cells if p.status is CellStatus.BUILD)

    @property
    def deferred(self) -> tuple[CellPlan, ...]:
        return tuple(p for p in self.cells if p.status is CellStatus.DEFERRED)


def binding_dir(framework: Framework, native_dir: Path = NATIVE_DIR) -> Path:
    return adapter_for(framework).binding_dir(native_dir)


def binding_problem(framework: Framework, native_dir: Path = NATIVE_DIR) -> str | None:
    """None when the framework's binding exists; else why no cell of it can build (its adapter's reason,
    or the binding folder missing from native/bindings/)."""
    adapter = adapter_for(framework)
    if adapter.binding_missing is not None:
        return adapter.binding_missing
    binding = adapter.binding_dir(native_dir)
    if (binding / "pyproject.toml").is_file():
        return None
    return f"no {framework.value} binding in {binding.relative_to(native_dir.parent)} yet"


def human_size(size: int | None) -> str:
    if size is None:
        return "unknown size"
    if size < 2**20:
        return f"{size / 2**10:.0f} KiB"
    return f"{size / 2**20:.0f} MiB" if size < 2**30 else f"{size / 2**30:.1f} GiB"


def _variant_problem(cell: Cell, artifact: FrameworkArtifact) -> str | None:
    """A local label that contradicts the cell's declared CUDA variant: the matrix is inconsistent."""
    local = Version(artifact.version).local
    variant = cell.build.cuda_variant
    if local and variant and local != variant:
        return f"framework build {artifact.version} is '{local}', the cell declares '{variant}'"
    if local and cell.is_cpu and local.startswith("cu"):
        return f"framework build {artifact.version} is a CUDA build, the cell is a CPU cell"
    return None


def missing_nvcc_reason(cell: Cell) -> str:
    """Why a CUDA cell has no compiler here, and how to get one: a toolkit this tool provisions from
    Debian (`aiacc-build toolkit fetch`), else only the release's builder image."""
    assert cell.cuda is not None
    spec = TOOLKITS.get(cell.cuda)
    if spec is not None and spec.machine == cell.arch.value == machine_arch():
        return f"needs nvcc {cell.cuda}: run `{hints.toolkit_fetch(cell.cuda)}` ({spec.approx_download})"
    image = builder_image_tag(cell.release, cell.cuda, cell.arch.value)
    return f"needs nvcc {cell.cuda}: only through builder image {image} (CI)"


def plan_cell(
    cell: Cell,
    selected: bool | None,
    client: RegistryClient,
    native_dir: Path = NATIVE_DIR,
    local_dirs: list[Path] | None = None,
    index_dirs: list[Path] | None = None,
) -> CellPlan:
    """Plan one cell. `selected`: True/False from a --cells selection, None for the default (on disk)."""

    def deferred(reason: str, **found: object) -> CellPlan:
        return CellPlan(cell=cell, status=CellStatus.DEFERRED, reason=reason, buildable_here=False, **found)  # type: ignore[arg-type]

    no_binding = binding_problem(cell.framework, native_dir)
    if no_binding is not None:
        return deferred(no_binding)
    if cell.arch.value != machine_arch():
        return deferred(f"needs an {cell.arch.value} builder (this machine is {machine_arch()})")
    try:
        pinned(cell.build)
    except ValueError as exc:
        return deferred(str(exc))

    compiler = None
    if cell.cuda is not None:
        compiler = find_cuda_compiler(cell.cuda)
        if compiler is None:
            return deferred(missing_nvcc_reason(cell))

    pythons = [cell.python] if cell.python else list(cell.env_pythons)
    interpreter = next((i for i in map(find_interpreter, pythons) if i is not None), None)
    if interpreter is None:
        return deferred(f"no Python {' / '.join(pythons)} interpreter on this machine", cuda_compiler=compiler)

    resolution = resolve_framework(cell, interpreter.python, client, local_dirs, index_dirs)
    found = {"build_python": interpreter.python, "interpreter": interpreter, "cuda_compiler": compiler}
    if resolution.artifact is None:
        return deferred(f"framework {cell.build.requirement}: {resolution.problem}", **found)
    artifact = resolution.artifact
    problem = _variant_problem(cell, artifact)
    if problem:
        return deferred(problem, framework=artifact, **found)

    # The default build takes only pip's find-links (/opt/wheels): quick, and what CI runs.
    wanted = artifact.source == "local" if selected is None else selected
    if wanted or artifact.is_local:  # a registry file is inspected only when it is about to be built
        facts = read_facts(cell.framework, artifact, client.cache_dir, client.offline)
        if isinstance(facts, FrameworkFacts):
            found["facts"] = facts
            problem = facts_problem(cell, facts, artifact.filename)
            if problem:
                return deferred(problem, framework=artifact, **found)
        elif isinstance(facts, str) and artifact.is_local:
            return deferred(f"framework file on this disk is unreadable: {facts}", framework=artifact, **found)
        # a registry file not inspected (offline): the build checks the facts in its installed build env
    if wanted:
        where = "on local disk" if artifact.is_local else f"download {human_size(artifact.size)}"
        return CellPlan(
            cell=cell,
            status=CellStatus.BUILD,
            reason=f"framework {artifact.filename} {where}",
            buildable_here=True,
            framework=artifact,
            **found,
        )  # type: ignore[arg-type]
    build_hint = hints.build_cells(cell.release_version, cell.key.split("/", 1)[1])
    if selected is False:
        reason = "not selected"
    elif artifact.is_local:
        reason = f"framework {artifact.filename} in a local index ({human_size(artifact.size)}): build it with `{build_hint}`"
    else:
        reason = f"framework not on local disk (download {human_size(artifact.size)}): build it with `{build_hint}`"
    return CellPlan(
        cell=cell, status=CellStatus.DEFERRED, reason=reason, buildable_here=True, framework=artifact, **found
    )  # type: ignore[arg-type]


def plan_cells(
    release: str,
    cells: tuple[Cell, ...] | list[Cell],
    client: RegistryClient,
    selected_keys: set[str] | None = None,
    native_dir: Path = NATIVE_DIR,
    local_dirs: list[Path] | None = None,
) -> BuildPlan:
    """Plan every cell of a release; `selected_keys` (cell keys) replaces the default 'on disk' choice."""
    plans = tuple(
        plan_cell(c, None if selected_keys is None else c.key in selected_keys, client, native_dir, local_dirs)
        for c in cells
    )
    return BuildPlan(release=release, cells=plans)
