"""What the build tool and the runtime know about one framework, behind one interface.

Each framework of the matrix has one adapter module (`adapters/<framework>.py`), as cibuildwheel has one
module per platform: its distributions, its binding folder and distribution, how to read the facts of a
framework file, its binding's build inputs, its conda rules, the probe `perseus doctor` runs, the
installer's detection and the names that are the framework's own. `naming.py` keeps the matrix's names.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..model import Cell, Framework
from ..errors import BuildError
from ..hashing import bytes_sha256

if TYPE_CHECKING:
    from ..checks.conda_rules import EnvChecker

# Libraries every binding may link and none may carry: the CUDA runtime and NCCL come with the
# framework (or the system) the user installed.
CUDA_LIBRARIES: tuple[str, ...] = ("libcudart*", "libnccl*")
# The MPI a job runs under: a wheel's MPI bootstrap plugins (libperseus_mpi_<mpi>.so, loaded only under a
# plain mpirun) link it and it must be the job's own, never a copy.
MPI_LIBRARIES: tuple[str, ...] = ("libmpi.so*", "libmpich.so*")
# The engine's MPI bootstrap plugins: declared parts of every framework wheel, built from the headers of
# recipes/mpi/fetch.sh (native/engine/CMakeLists.txt, PERSEUS_MPI_PLUGINS); a wheel without one fails the build.
MPI_PLUGINS: tuple[str, ...] = ("openmpi", "mpich")
_RECORD_MEMBER = re.compile(r"^[^/]+\.dist-info/RECORD$")


def native_binding_dir(native_dir: Path, framework: str) -> Path:
    """native/bindings/<framework>: a framework's native code (Caffe's library too, which has no adapter)."""
    return native_dir / "bindings" / framework


class FactsError(BuildError):
    pass


@dataclass(frozen=True)
class FrameworkFacts:
    """What a framework file was really built with, read from the file itself."""

    cuda: str | None  # the CUDA major.minor the framework was compiled with; None: a CPU build
    cxx11_abi: bool
    interface: str | None = None  # digest of its headers + CMake files (None: unknown, e.g. no RECORD)

    @property
    def abi_label(self) -> str:
        return "cxx11" if self.cxx11_abi else "pre-cxx11"

    @property
    def toolkit_label(self) -> str:
        return f"CUDA {self.cuda}" if self.cuda else "CPU"


def interface_digest(record: str, prefixes: tuple[str, ...]) -> str | None:
    """The digest of the RECORD lines (path + sha256) of the files under `prefixes`; None when it lists none."""
    lines = []
    for line in record.splitlines():
        path, _, rest = line.partition(",")
        if path.startswith(prefixes):
            lines.append(f"{path},{rest.split(',')[0]}")
    if not lines:
        return None
    return bytes_sha256("\n".join(sorted(lines)).encode())


def wheel_record(archive: zipfile.ZipFile) -> str | None:
    """The text of a wheel's RECORD (None when the wheel has not exactly one)."""
    records = [n for n in archive.namelist() if _RECORD_MEMBER.match(n)]
    return archive.read(records[0]).decode() if len(records) == 1 else None


@dataclass(frozen=True)
class InstallerDetection:
    """How install_AIACC-Training.sh recognises the framework and its CUDA in the user's environment.

    Data the script interprets (it runs on a stdlib-only Python 3.6, so it cannot import this tool):
    `cuda_method` names one of the script's readers:
      - "python-assignment": `<variable> = '12.4'` (None: CPU) in `<file>` of the package folder,
        after the version's local label (+cu118 / +cpu) when there is one (torch's version.py);
      - "tensorflow-build-info": TensorFlow's build_info.py, every era's spelling;
      - "distribution-suffix": `-cuXY` in the distribution name (mxnet-cu117), none: a CPU build.
    """

    cuda_method: str
    cuda_file: str | None = None  # relative to the package folder
    cuda_variable: str | None = None
    cpu_distributions: tuple[str, ...] = ()  # names that always mean a CPU build (tensorflow-cpu)


@dataclass(frozen=True)
class CondaFramework:
    """The framework from a conda channel: the channels it needs (in priority order) and its specs."""

    channels: tuple[str, ...]
    dependencies: tuple[str, ...]


class FrameworkAdapter:
    """One framework. Subclasses set the class attributes and override what their framework does
    differently; the defaults describe a framework with no facts reader and nothing from conda."""

    name: ClassVar[str]  # the matrix's spelling: "torch"
    display_name: ClassVar[str]  # "PyTorch"
    import_name: ClassVar[str]  # the module users import: "torch"
    tag_abbreviation: ClassVar[str]  # in Docker tags (seed: pt / tf / mx)
    python_specific: ClassVar[bool]  # the binding links the CPython ABI: one wheel per Python
    distributions: ClassVar[tuple[str, ...]]  # PyPI distributions that install it (normalised names)
    distribution_pattern: ClassVar[str | None] = None  # a family of names (mxnet-cu117), normalised
    # None: native/bindings/<name> holds its binding; otherwise why its cells are not built yet
    binding_missing: ClassVar[str | None] = None
    own_libraries: ClassVar[tuple[str, ...]] = ()  # its shared libraries, never vendored (auditwheel --exclude)
    framework_dir_variable: ClassVar[str | None] = None  # tells a binding build in another env where it is
    pip_build_bundles_cudnn: ClassVar[bool] = False  # its pip CUDA builds carry cuDNN (no conda cudnn)
    installer: ClassVar[InstallerDetection]
    doctor_probe: ClassVar[str]  # Python code printing one JSON object of build facts (doctor)
    runtime_hook: ClassVar[str | None] = None  # module `import perseus` installs (perseus.<module>.install())
    # its runtime runs on the native engine, so it honours every PERSEUS_* variable the engine reads
    # (perseus.config's ENGINE_RUNTIMES; a variable's honoured_by and docs/variables.md's columns follow)
    honours_engine_variables: ClassVar[bool] = True
    # installed next to the framework file in build and test envs: what its own metadata allows but it
    # cannot run with (mxnet 1.9.1 declares numpy<2 yet uses aliases numpy 1.24 removed)
    companion_requirements: ClassVar[tuple[str, ...]] = ()

    # --- names that are the framework's own -------------------------------------------------------

    @property
    def framework(self) -> Framework:
        return Framework(self.name)

    @property
    def binding_distribution(self) -> str:
        """`perseus_torch`: the wheel's distribution name."""
        return f"perseus_{self.name}"

    @property
    def selftest_module(self) -> str:
        """The self-test every framework wheel ships: `python -m perseus.torch._selftest`."""
        return f"perseus.{self.name}._selftest"

    def declared_parts(self) -> dict[str, str]:
        """Files every wheel of this framework holds beside its binding library, by path in the wheel -> what
        they are; the build fails naming one it did not make."""
        return {f"perseus/{self.name}/libperseus_mpi_{mpi}.so": f"the {mpi} MPI bootstrap plugin" for mpi in MPI_PLUGINS}

    def binding_dir(self, native_dir: Path) -> Path:
        return native_binding_dir(native_dir, self.name)

    def is_distribution(self, normalised_name: str) -> bool:
        """True when a (normalised) distribution name installs this framework."""
        if normalised_name in self.distributions:
            return True
        return bool(self.distribution_pattern and re.fullmatch(self.distribution_pattern, normalised_name))

    # --- the binding's build inputs ----------------------------------------------------------------

    def framework_dir(self, site_packages: Path) -> Path:
        return site_packages / self.import_name

    def library_dirs(self, site_packages: Path) -> list[Path]:
        """Where its shared libraries lie in an env (auditwheel must see them to judge the rest)."""
        return [p for p in (self.framework_dir(site_packages) / "lib",) if p.is_dir()]

    def build_environment(self, site_packages: Path) -> dict[str, str]:
        """What a build backend running in another env needs to find the framework."""
        if self.framework_dir_variable is None:
            return {}
        return {self.framework_dir_variable: str(self.framework_dir(site_packages))}

    @property
    def build_variables(self) -> tuple[str, ...]:
        """The names `build_environment` sets: inputs of the binding's build, not settings of a job (perseus
        does not warn about them when a job inherits them)."""
        return (self.framework_dir_variable,) if self.framework_dir_variable else ()

    # --- facts of a framework file -----------------------------------------------------------------

    reads_facts: ClassVar[bool] = False  # facts_from_wheel / facts_of_installed are implemented

    def facts_from_wheel(self, archive: zipfile.ZipFile) -> FrameworkFacts | None:
        """The facts of a framework wheel (None: this adapter has no reader)."""
        return None

    def facts_of_installed(self, site_packages: Path) -> FrameworkFacts | None:
        """The facts of the framework installed in an environment (None: no reader)."""
        return None

    # --- conda -------------------------------------------------------------------------------------

    def conda_framework(self, cell: Cell, python: str) -> CondaFramework | None:
        """The framework from a conda channel for this cell and Python; None: from pip (the default)."""
        return None

    conda_package: ClassVar[str | None] = None  # its conda package name, where a channel carries it

    def check_conda(self, checker: EnvChecker) -> None:
        """Rules of this framework's conda package for one environment file (none by default)."""


def check_adapter(adapter: FrameworkAdapter) -> None:
    """Fail loudly when an adapter leaves a required attribute unset."""
    required = ("name", "display_name", "import_name", "tag_abbreviation", "python_specific", "distributions",
                "installer", "doctor_probe")
    missing = [a for a in required if not hasattr(adapter, a)]
    if missing:
        raise TypeError(f"framework adapter {type(adapter).__name__} does not set {', '.join(missing)}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", adapter.name):
        raise TypeError(f"framework adapter name {adapter.name!r} must be a lower-case identifier (it names a package)")
