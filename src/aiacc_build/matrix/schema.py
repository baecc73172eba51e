"""Pydantic models of the matrix files: release files, facts files and the synced registry facts.

One typed model drives validation, the JSON schema (`matrix/schema.json`) and the error messages.
Every model forbids unknown keys. Versions are validated with `packaging.version`; the loader turns
these file models into the frozen dataclasses of `aiacc_build.model`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..adapters import names as adapter_names


def _check_version(value: str) -> str:
    try:
        parsed = Version(value)
    except InvalidVersion:
        raise ValueError(f"{value!r} is not a valid version (PEP 440, e.g. '1.7.1')") from None
    if parsed.local is not None:
        raise ValueError(f"{value!r} has a local label; write the public version ('{parsed.public}')")
    return value


def _check_python(value: str) -> str:
    if not re.fullmatch(r"3\.\d{1,2}", value):
        raise ValueError(f"{value!r} is not a CPython minor version like '3.6' or '3.11' (quote it in YAML)")
    return value


def _check_accelerator(value: str) -> str:
    if value != "cpu" and not re.fullmatch(r"cuda\d{1,2}\.\d", value):
        raise ValueError(f"{value!r} is not an accelerator: write 'cpu' or 'cuda<major>.<minor>', e.g. 'cuda11.0'")
    return value


def _check_requirement(value: str) -> str:
    try:
        req = Requirement(value)
    except InvalidRequirement as exc:
        raise ValueError(f"{value!r} is not a pip requirement: {exc}") from None
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        raise ValueError(f"{value!r} must pin one exact version with '==' (e.g. 'torch==1.7.1+cu110')")
    return value


VersionStr = Annotated[str, AfterValidator(_check_version)]
PythonStr = Annotated[str, AfterValidator(_check_python)]
AcceleratorStr = Annotated[str, AfterValidator(_check_accelerator)]
RequirementStr = Annotated[str, AfterValidator(_check_requirement)]
# The frameworks a matrix file may name: one per registered adapter (aiacc_build.adapters).
FrameworkName = Literal[adapter_names()]  # type: ignore[valid-type]
ArchName = Literal["x86_64", "aarch64"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- release files: matrix/releases/<version>.yaml -------------------------------------------------


class ReleaseSection(Strict):
    """Release-wide naming data and tool versions (becomes `model.ReleaseInfo`)."""

    version: VersionStr
    cibuildwheel: VersionStr = Field(description="exact cibuildwheel version the CI jobs pin")
    manylinux_image: str = Field(description="cibuildwheel manylinux image policy, e.g. manylinux2014")
    docker_os_types: list[str] = Field(min_length=1)
    local_os_type: str
    mirror_url: Annotated[str, Field(pattern=r"^https?://")]
    docker_registry: str
    docker_image: str
    docker_tag_suffix: str
    conda_dir: str


class WheelTagsSection(Strict):
    independent_python_tag: str
    platform: dict[FrameworkName, Annotated[str, Field(pattern=r"\{arch\}")]]
    repair_platform: dict[FrameworkName, Annotated[str, Field(pattern=r"\{arch\}")]]


class SupportEntry(Strict):
    """One framework version of a support table, optionally with the exact Pythons / arches wanted.

    Everything written here must exist upstream (strict): an impossible Python or arch is an error.
    """

    version: VersionStr
    pythons: list[PythonStr] | None = None
    arches: list[ArchName] | None = None


class CudaRange(Strict):
    min: VersionStr
    max: VersionStr


class AcceleratorRule(Strict):
    """Which builds of the listed versions to take: every CUDA build within the range, and CPU."""

    cuda: CudaRange | None = None
    cpu: bool = False


class ExcludeRule(Strict):
    """Drop derived cells that match every given field. Each rule must match at least one cell."""

    version: VersionStr | None = None
    accelerator: AcceleratorStr | None = None
    python: PythonStr | None = None
    arch: ArchName | None = None
    reason: str = Field(min_length=3)


class FrameworkRules(Strict):
    """How a release derives one framework's cells from the facts.

    Either `support` (a table: accelerator -> versions; every pair must exist upstream) or
    `versions` + `accelerators` (take every upstream build of those versions that fits).
    `pythons` / `arches` constrain; `env_pythons` lists the Pythons of a Python-independent
    framework's environments (default: every release Python the framework supports).
    """

    support: dict[Annotated[str, AfterValidator(_check_accelerator)], list[Union[VersionStr, SupportEntry]]] | None = None
    versions: list[VersionStr] | None = None
    accelerators: AcceleratorRule | None = None
    pythons: list[PythonStr] | None = None
    arches: list[ArchName] | None = None
    env_pythons: list[PythonStr] | None = None
    exclude: list[ExcludeRule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_way(self) -> "FrameworkRules":
        if self.support is not None and (self.versions is not None or self.accelerators is not None):
            raise ValueError("use either 'support' or 'versions' + 'accelerators', not both")
        if self.support is None and (self.versions is None or self.accelerators is None):
            raise ValueError("missing 'support' (a table accelerator -> versions) or 'versions' + 'accelerators'")
        return self


class CaffeSection(Strict):
    """BVLC Caffe: a framework whose artifacts are not wheels but the patches (applied to the upstream commit)
    and a libperseus-caffe archive (.so + headers) per platform (recipes/caffe, native/bindings/caffe)."""

    upstream_commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")] = Field(
        description="the BVLC/caffe commit the patches apply to")
    patches: list[Annotated[str, Field(pattern=r"^[1-9]_[a-z0-9_]+\.patch$")]] = Field(
        min_length=1, description="recipes/caffe/patches/bvlc_caffe/<name>, published as patches/bvlc_caffe/<name>")
    platforms: list[Annotated[str, Field(pattern=r"\{arch\}")]] = Field(
        min_length=1, description="platform tags of the libperseus-caffe archives, e.g. linux_{arch}")
    gpu_toolkit: str = Field(description="the CUDA + cuDNN a GPU build of the patched Caffe needs (CI job)")


class MxnetPatchSection(Strict):
    """The MXNet SyncBatchNorm source patch (manual 4.7): recipes/mxnet/patches/<patch>, for one apache/mxnet
    commit, published as mxnet/patches/<patch>."""

    upstream_version: VersionStr = Field(description="the apache/mxnet release the patch applies to")
    upstream_commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")] = Field(
        description="the apache/mxnet commit of that release's tag")
    patch: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]*\.patch$")]


class ReleaseFile(Strict):
    """A release matrix: its naming data and the rules that derive its cells from the facts."""

    release: ReleaseSection
    wheel_tags: WheelTagsSection
    pythons: list[PythonStr] = Field(min_length=1, description="every Python the release supports")
    arches: list[ArchName] = Field(min_length=1)
    frameworks: dict[FrameworkName, FrameworkRules] = Field(min_length=1)
    caffe: CaffeSection | None = None
    mxnet_patch: MxnetPatchSection | None = None


# --- facts files: matrix/facts/<framework>.yaml (hand-written, cited) ---------------------------------


class BuildFact(Strict):
    """One upstream build of a framework version: how to install it and what it was built for.

    `accelerator: pypi` and `pythons: pypi` take the value from the registry facts that
    `aiacc-build matrix sync` writes (matrix/facts/pypi.yaml): the CUDA its wheels require and the
    Pythons its Linux wheels exist for (for an extra-index build: those of the same public version
    on PyPI, since upstream builds every variant of a release for the same Pythons).
    """

    accelerator: Union[Literal["pypi"], AcceleratorStr]
    requirement: RequirementStr
    index_url: Annotated[str, Field(pattern=r"^https://")] | None = None
    cuda_variant: str | None = None
    cxx11_abi: bool | None = None
    pythons: Union[Literal["pypi"], list[PythonStr]]
    arches: list[ArchName] = Field(min_length=1)
    source: str = Field(min_length=2, description="a key of `sources` or a URL")
    note: str | None = None


class VersionFacts(Strict):
    builds: list[BuildFact] = Field(min_length=1)
    note: str | None = None


class FactsFile(Strict):
    framework: FrameworkName
    sources: dict[str, str] = Field(description="citations: name -> URL or document")
    versions: dict[VersionStr, VersionFacts]


# --- registry facts: matrix/facts/pypi.yaml (written by `aiacc-build matrix sync`) --------------------


class RegistryWheels(Strict):
    pythons: list[PythonStr]
    requires_cuda: str | None = Field(description="CUDA major.minor of the nvidia/cuda wheels it requires")
    evidence: str | None = Field(default=None, description="the Requires-Dist line the CUDA was read from")
    wheel: str = Field(description="the wheel whose metadata was read")


class RegistryRelease(Strict):
    wheels: dict[ArchName, RegistryWheels]


class RegistryFile(Strict):
    recorded: str = Field(description="folder of the registry recordings these facts were computed from")
    packages: dict[str, dict[str, RegistryRelease]]
