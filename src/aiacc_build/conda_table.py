"""matrix/facts/conda/packages.yaml: which conda packages exist on which channel, in which versions, and why.

The renderer asks it whether PyTorch can come from a conda channel for a cell; `check conda`
checks every rendered environment file against it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Protocol

from packaging.version import Version
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import MatrixError
from .paths import facts_dir

TABLE_RELATIVE = Path("conda") / "packages.yaml"  # under the matrix's facts/


def table_path() -> Path:
    """The table of the matrix in use (paths.matrix_dir)."""
    return facts_dir() / TABLE_RELATIVE


class PinnedSpec(Protocol):
    version: str | None  # rattler's version spec of a match spec, e.g. "11.0.*"


def pin(spec: PinnedSpec | None) -> str | None:
    """`11.0.*` -> `11.0`: the series a `name=X` match spec pins."""
    if spec is None or spec.version is None:
        return None
    return spec.version.removesuffix(".*").lstrip("=")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Strict):
    url: str
    note: str


class Removed(_Strict):
    source: str
    versions: tuple[str, ...]


class PytorchBuild(_Strict):
    """The builds of one PyTorch release on a channel: its CUDA variants, CPU build and Pythons."""

    version: str
    cuda: tuple[str, ...] = ()
    cpu: bool = False
    pythons: tuple[str, ...]
    source: str


class Package(_Strict):
    source: str
    versions: tuple[str, ...] = ()
    any_version: bool = False
    builds: tuple[PytorchBuild, ...] = ()  # pytorch only: per-release builds
    removed: Removed | None = None
    cuda: tuple[str, ...] = ()  # cudnn: the CUDA toolkits some build accepts
    requires_channels: tuple[str, ...] = ()  # e.g. pytorch-cuda's packages come from nvidia
    not_our_convention: str | None = None  # exists, but our files must not take it from here (why)

    @model_validator(mode="after")
    def _has_versions(self) -> "Package":
        if not (self.versions or self.any_version or self.builds):
            raise ValueError("a package needs `versions`, `builds` or `any_version: true`")
        return self

    def all_versions(self) -> tuple[str, ...]:
        return self.versions + tuple(b.version for b in self.builds)


class Channel(_Strict):
    url: str
    packages: dict[str, Package]


class Conventions(_Strict):
    cudatoolkit_last: str
    pytorch_cuda_first_torch: str
    pytorch_channel_last_torch: str
    pip_only: tuple[str, ...]


class CondaTable(_Strict):
    sources: dict[str, Source]
    conventions: Conventions
    channels: dict[str, Channel]
    path: str = Field(default="", exclude=True)  # the file it was read from (load_conda_table sets it)

    @model_validator(mode="after")
    def _sources_exist(self) -> "CondaTable":
        missing = sorted(
            {
                s
                for ch in self.channels.values()
                for p in ch.packages.values()
                for s in (p.source, *(b.source for b in p.builds), *((p.removed.source,) if p.removed else ()))
                if s not in self.sources
            }
        )
        if missing:
            raise ValueError(f"entries cite sources that `sources` does not define: {', '.join(missing)}")
        return self

    def source_url(self, source: str) -> str:
        return self.sources[source].url

    def channels_with(self, package: str) -> list[str]:
        return [name for name, ch in self.channels.items() if package in ch.packages]

    def pytorch_channel(self, version: str, cuda: str | None, python: str) -> str | None:
        """The channel that carries this exact PyTorch build (version, CUDA or CPU, Python), if any."""
        for name, channel in self.channels.items():
            package = channel.packages.get("pytorch")
            if package is None or package.not_our_convention:
                continue
            for build in package.builds:
                if build.version == version and python in build.pythons and (build.cpu if cuda is None else cuda in build.cuda):
                    return name
        return None

    def pytorch_cuda_era(self, torch_version: str) -> bool:
        """True where the pytorch channel pins CUDA with `pytorch-cuda=X` instead of `cudatoolkit=X`."""
        return Version(torch_version) >= Version(self.conventions.pytorch_cuda_first_torch)


def load_conda_table(path: Path | None = None) -> CondaTable:
    from .matrix.files import read_model  # file:line in every problem

    target = Path(path or table_path())
    table, _ = read_model(target, CondaTable)
    return table.model_copy(update={"path": str(target)})


def default_conda_table() -> CondaTable:
    """The matrix's table (paths.matrix_dir), read once per file version."""
    path = table_path()
    try:
        stat = path.stat()
        return _table_at(str(path), stat.st_mtime_ns, stat.st_size)
    except OSError as exc:
        raise MatrixError([f"cannot read the conda package table {path}: {exc.strerror}"]) from None


@lru_cache(maxsize=2)
def _table_at(path: str, _mtime_ns: int, _size: int) -> CondaTable:
    try:
        return load_conda_table(Path(path))
    except MatrixError as exc:
        raise MatrixError([f"the conda package table is invalid: {p}" for p in exc.problems]) from None
