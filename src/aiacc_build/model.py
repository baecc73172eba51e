"""The typed model every other module works on: a release's naming data and its cells.

A cell is one framework wheel: (framework, framework version, CUDA or CPU, Python where the wheel is
CPython-specific, architecture). Docker OS types and the Pythons of a Python-independent wheel's
environments multiply images and conda files, never cells. The matrix loader builds these objects from
`matrix/releases/*.yaml`; names are computed from them by `aiacc_build.naming` alone.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from .errors import ConfigurationError


# The frameworks the tool knows, name -> whether its binding links the CPython ABI. Filled by the adapter
# registry (`aiacc_build.adapters.register`), which the package imports first: the model stays a leaf.
_KNOWN_FRAMEWORKS: dict[str, bool] = {}


class UnknownFrameworkError(ConfigurationError, ValueError):
    """A framework name no adapter is registered for (a ValueError too: `Framework(name)` raises it)."""


def register_framework(name: str, python_specific: bool) -> None:
    _KNOWN_FRAMEWORKS[name] = python_specific


def unregister_framework(name: str) -> None:
    _KNOWN_FRAMEWORKS.pop(name, None)
    Framework._interned.pop(name, None)


class _FrameworkType(type):
    def __iter__(cls) -> Iterator[Framework]:
        """Every framework the tool knows: one per registered adapter."""
        return iter([cls(name) for name in _KNOWN_FRAMEWORKS])


class Framework(str, metaclass=_FrameworkType):
    """A framework as the matrix spells it ("torch"). The set is open: a framework is known when an
    adapter is registered for it (`aiacc_build.adapters`), and all the tool knows about it is there.

    Instances are interned, so `cell.framework is Framework("torch")` holds; an unknown name raises
    ValueError naming the known ones.
    """

    _interned: ClassVar[dict[str, Framework]] = {}

    def __new__(cls, name: str) -> Framework:
        if isinstance(name, Framework):
            return name
        known = cls._interned.get(name)
        if known is not None:
            return known
        if name not in _KNOWN_FRAMEWORKS:
            close = difflib.get_close_matches(str(name), list(_KNOWN_FRAMEWORKS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownFrameworkError(
                f"unknown framework {str(name)!r}: no adapter is registered for it "
                f"(known: {', '.join(_KNOWN_FRAMEWORKS)}){hint}. A framework enters the tool as a module in "
                "src/aiacc_build/adapters/ listed in adapters.BUILTIN"
            )
        instance = super().__new__(cls, name)
        cls._interned[name] = instance
        return instance

    @property
    def value(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Framework({self.value!r})"


def python_specific(framework: Framework) -> bool:
    """True when the framework's binding links the CPython ABI (a C++ extension): one wheel per Python."""
    return _KNOWN_FRAMEWORKS[str(Framework(framework))]


def accelerator(cuda: str | None) -> str:
    """The accelerator of a cell key, a conda file, a fact or an image tag: `cuda11.0` or `cpu`."""
    return "cpu" if cuda is None else f"cuda{cuda}"


class Arch(str, Enum):
    X86_64 = "x86_64"
    AARCH64 = "aarch64"


@dataclass(frozen=True)
class CaffeArtifacts:
    """BVLC Caffe in a release: not wheels but the patches and one libperseus-caffe archive per platform
    (`platforms` with `{arch}` to fill in). Paths under the mirror: aiacc_build.caffe.package."""

    upstream_commit: str
    patches: tuple[str, ...]
    platforms: tuple[str, ...]
    gpu_toolkit: str


@dataclass(frozen=True)
class MxnetSourcePatch:
    """perseus-mxnet-sync-bn.patch in a release: a source patch for one apache/mxnet commit, published as is
    (recipes/mxnet/patches/<patch> -> <mirror>/mxnet/patches/<patch>; aiacc_build.mxnet_patch)."""

    upstream_version: str
    upstream_commit: str
    patch: str


@dataclass(frozen=True)
class WheelTagRules:
    """How a release tags its wheels. Data of the release, not code.

    `platform` is the tag the published file carries, per framework, with `{arch}` to fill in;
    `repair_platform` is the tag `auditwheel repair` gives the same wheel. When they differ, the
    published name wins: the repaired wheel is re-tagged back so that the seed's URLs keep working.
    """

    independent_python_tag: str  # Python-independent wheels: "py2.py3" (1.5.0) or "py3"
    platform: dict[Framework, str]
    repair_platform: dict[Framework, str]


@dataclass(frozen=True)
class ReleaseInfo:
    """Release-wide data: versions of the build tools and every naming convention of the release."""

    version: str
    cibuildwheel: str  # exact cibuildwheel version its CI jobs pin
    manylinux_image: str  # cibuildwheel's manylinux image policy for the builder, e.g. "manylinux2014"
    docker_os_types: tuple[str, ...]  # OS types its images are published for (seed: centos7, ubuntu1804)
    local_os_type: str  # the declared Debian OS type of images built on a machine without those archives
    mirror_url: str  # where wheels, conda files and the install script are published
    docker_registry: str  # e.g. "registry.cn-beijing.aliyuncs.com/cto_office"
    docker_image: str  # "perseus-training"
    docker_tag_suffix: str  # "latest"
    conda_dir: str  # folder of conda files under the mirror: "conda/latest"
    wheel_tags: WheelTagRules
    caffe: CaffeArtifacts | None = None  # None: the release has no Caffe artifacts
    mxnet_patch: MxnetSourcePatch | None = None  # None: the release ships no MXNet source patch


@dataclass(frozen=True)
class FrameworkBuild:
    """The exact upstream framework release a cell is built against and installed beside.

    "Exact" means version + CUDA variant + C++ ABI: `torch==1.7.1+cu110` is not the registry's
    default `torch==1.7.1` (a CUDA 10.2 build).
    """

    requirement: str  # pip requirement string, e.g. "torch==1.7.1+cu110"
    index_url: str | None  # extra index that serves that exact build (None: the default registry)
    cuda_variant: str | None  # upstream local version label: "cu110", "cpu", None when unlabelled
    cxx11_abi: bool | None  # None where it does not apply (Python-independent frameworks)


@dataclass(frozen=True)
class Cell:
    release: ReleaseInfo = field(compare=False, hash=False, repr=False)
    release_version: str
    framework: Framework
    framework_version: str
    cuda: str | None  # "11.0"; None for a CPU cell
    python: str | None  # "3.6" for a CPython-specific wheel; None for a Python-independent one
    arch: Arch
    env_pythons: tuple[str, ...]  # Pythons its conda files and images are made for
    build: FrameworkBuild

    def __post_init__(self) -> None:
        specific = python_specific(self.framework)
        if specific != (self.python is not None):
            raise ValueError(
                f"{self.framework.value} wheels are "
                f"{'CPython-specific' if specific else 'Python-independent'}: "
                f"python={self.python!r} does not fit"
            )
        if not self.env_pythons:
            raise ValueError("a cell needs at least one Python for its environments")

    @property
    def is_cpu(self) -> bool:
        return self.cuda is None

    @property
    def key(self) -> str:
        """A stable, human-readable id: `1.5.0/torch-1.7.1/cuda11.0/py3.6/x86_64`."""
        accel = accelerator(self.cuda)
        py = f"py{self.python}" if self.python else "py-any"
        return f"{self.release_version}/{self.framework.value}-{self.framework_version}/{accel}/{py}/{self.arch.value}"


@dataclass(frozen=True)
class CellGroup:
    """The cells one CI job builds: same framework release, CUDA and architecture, several Pythons."""

    release: ReleaseInfo = field(compare=False, hash=False, repr=False)
    release_version: str
    framework: Framework
    framework_version: str
    cuda: str | None
    arch: Arch
    cells: tuple[Cell, ...]


def group_cells(cells: list[Cell] | tuple[Cell, ...]) -> list[CellGroup]:
    """Group cells by (release, framework, version, CUDA, arch), keeping first-seen order."""
    groups: dict[tuple, list[Cell]] = {}
    for cell in cells:
        k = (cell.release_version, cell.framework, cell.framework_version, cell.cuda, cell.arch)
        groups.setdefault(k, []).append(cell)
    return [
        CellGroup(
            release=members[0].release,
            release_version=k[0],
            framework=k[1],
            framework_version=k[2],
            cuda=k[3],
            arch=k[4],
            cells=tuple(members),
        )
        for k, members in groups.items()
    ]
