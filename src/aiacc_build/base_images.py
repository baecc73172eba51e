"""The committed table of upstream base images (matrix/facts/docker/base_images.yaml): which tags exist, which
NVIDIA has withdrawn (and when), and which were never published; every base image a rendered
Dockerfile can resolve to is checked against it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ValidationError, model_validator

from .paths import facts_dir

BASE_IMAGES_RELATIVE = Path("docker") / "base_images.yaml"  # under the matrix's facts/
NVIDIA_CUDA = "nvidia/cuda"
LOCAL_BASE_REPOSITORY = "perseus-base"  # made on this machine (naming.local_base_image), never pulled


class UpstreamTag(BaseModel, frozen=True):
    repository: str
    tag: str
    status: Literal["available", "withdrawn"]
    withdrawn: date | None = None  # when it was found gone upstream
    source: str

    @model_validator(mode="after")
    def _withdrawn_has_date(self) -> UpstreamTag:
        if (self.status == "withdrawn") != (self.withdrawn is not None):
            raise ValueError(f"{self.reference}: a withdrawn tag needs its `withdrawn` date, an available one none")
        return self

    @property
    def reference(self) -> str:
        return f"{self.repository}:{self.tag}"

    @property
    def label(self) -> str:
        return "available" if self.withdrawn is None else f"withdrawn upstream ({self.withdrawn.isoformat()})"


class AbsentRule(BaseModel, frozen=True):
    repository: str
    tag_pattern: str
    reason: str
    source: str

    def matches(self, repository: str, tag: str) -> bool:
        return repository == self.repository and re.search(self.tag_pattern, tag) is not None


class BaseImageTable(BaseModel, frozen=True):
    recorded: date
    sources: dict[str, str]
    absent: tuple[AbsentRule, ...]
    tags: tuple[UpstreamTag, ...]

    @model_validator(mode="after")
    def _sources_known(self) -> BaseImageTable:
        unknown = sorted({e.source for e in (*self.tags, *self.absent)} - set(self.sources))
        if unknown:
            raise ValueError(f"entries cite sources not listed under `sources`: {', '.join(unknown)}")
        return self

    def find(self, reference: str) -> UpstreamTag | None:
        repository, tag = split_reference(reference)
        return next((t for t in self.tags if t.repository == repository and t.tag == tag), None)

    def absent_reason(self, reference: str) -> str | None:
        repository, tag = split_reference(reference)
        rule = next((r for r in self.absent if r.matches(repository, tag)), None)
        return None if rule is None else f"{rule.reason} ({self.sources[rule.source]})"


class BaseImageError(ValueError):
    """A base image reference that no upstream ever published."""


@dataclass(frozen=True)
class BaseImageStatus:
    reference: str
    label: str  # "available", "withdrawn upstream (date)" or "made locally"

    @property
    def withdrawn(self) -> bool:
        return self.label.startswith("withdrawn")


def split_reference(reference: str) -> tuple[str, str]:
    """`nvidia/cuda:11.8.0-devel-rockylinux8` -> (nvidia/cuda, 11.8.0-devel-rockylinux8); no tag: latest."""
    last = reference.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = reference.rsplit(":", 1)
        return repository, tag
    return reference, "latest"


def base_images_file() -> Path:
    """The table of the matrix in use (paths.matrix_dir)."""
    return facts_dir() / BASE_IMAGES_RELATIVE


def load_table(path: Path | None = None) -> BaseImageTable:
    path = path or base_images_file()
    try:
        data = yaml.safe_load(path.read_text())
        return BaseImageTable.model_validate(data)
    except OSError as exc:
        raise BaseImageError(f"cannot read the base image table {path}: {exc.strerror}") from None
    except (yaml.YAMLError, ValidationError) as exc:
        raise BaseImageError(f"{path} is not a valid base image table: {exc}") from None


_loaded: dict[tuple, BaseImageTable] = {}


def shipped_table() -> BaseImageTable:
    """The matrix's table, read once per file version (a changed or another matrix's file is read again)."""
    path = base_images_file()
    try:
        stat = path.stat()
        key: tuple = (str(path), stat.st_mtime_ns, stat.st_size)
    except OSError:
        key = (str(path),)
    if key not in _loaded:
        _loaded.clear()
        _loaded[key] = load_table(path)
    return _loaded[key]


def _version_key(tag: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", tag))


def resolve_cuda_image(table: BaseImageTable, cuda: str, flavor: str, os_name: str) -> str:
    """The real nvidia/cuda tag of CUDA major.minor `cuda` for `flavor` ("devel" or "cudnn-devel") on
    `os_name` (`ubuntu22.04`): an available one first, the newest patch and cuDNN major. Without a
    recorded tag, the unpatched name is returned: `check` then rejects it with the nearest real tags."""
    cudnn = r"-cudnn\d*" if flavor == "cudnn-devel" else ""
    pattern = re.compile(rf"^{re.escape(cuda)}(\.\d+)?{cudnn}-devel-{re.escape(os_name)}$")
    found = [t for t in table.tags if t.repository == NVIDIA_CUDA and pattern.match(t.tag)]
    if not found:
        return f"{NVIDIA_CUDA}:{cuda}-{flavor}-{os_name}"
    best = max(found, key=lambda t: (t.status == "available", _version_key(t.tag)))
    return best.reference


def nearest_tags(table: BaseImageTable, reference: str, limit: int = 3) -> list[str]:
    """Recorded tags of the same repository, closest first: the same version (CUDA major.minor), then
    available before withdrawn (those say so), then difflib's similarity."""
    repository, tag = split_reference(reference)
    version = tag.split("-", 1)[0]
    candidates = [t for t in table.tags if t.repository == repository]

    def closeness(entry: UpstreamTag) -> tuple[bool, bool, float]:
        head = entry.tag.split("-", 1)[0]
        same_version = head == version or head.startswith(version + ".")
        return same_version, entry.status == "available", difflib.SequenceMatcher(None, tag, entry.tag).ratio()

    ranked = sorted(candidates, key=closeness, reverse=True)[:limit]
    return [t.reference + ("" if t.status == "available" else f" ({t.label})") for t in ranked]


def check(table: BaseImageTable, reference: str) -> BaseImageStatus:
    """The upstream status of a base image; a reference never published fails with the nearest real ones."""
    repository, _ = split_reference(reference)
    if repository == LOCAL_BASE_REPOSITORY:
        return BaseImageStatus(reference, "made locally")
    entry = table.find(reference)
    if entry is not None:
        return BaseImageStatus(reference, entry.label)
    absent = table.absent_reason(reference)
    nearest = nearest_tags(table, reference)
    why = f": {absent}" if absent else " (not in matrix/facts/docker/base_images.yaml)"
    raise BaseImageError(
        f"base image {reference} was never published upstream{why}; nearest real tags: "
        + (", ".join(nearest) or "none recorded for " + repository)
        + ". Fix the matrix or add the tag with its source to matrix/facts/docker/base_images.yaml"
    )
