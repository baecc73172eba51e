"""Find the exact upstream framework build a cell is built against, on local disk or in a registry.

"Exact" is strict: the file's version must equal the pinned version including its local label, so a
cell pinned to `torch==1.6.0+cu101` never takes `1.6.0` (the registry's CUDA 10.2 build) and a cell
pinned to `torch==2.13.0` never takes a local `2.13.0+cpu`. (pip's own `==` would accept both.) The
result is a concrete file, installed by its path or URL, so pip cannot substitute another build later.
"""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urldefrag, urlparse

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from ..model import Cell, FrameworkBuild
from ..naming import cpython_tags, python_nodot
from ..registry import DEFAULT_REGISTRY, RegistryClient, page_links



@dataclass(frozen=True)
class FrameworkArtifact:
    """One concrete framework wheel: what a build env and a test env install, byte for byte."""

    project: str
    version: str  # full version, local label included: "2.13.0+cpu"
    filename: str
    location: str  # absolute path for a local file, URL for a registry file
    size: int | None
    sha256: str | None
    source: str  # "local" (pip find-links), "local-index" (a file:// index) or "registry"

    @property
    def is_local(self) -> bool:
        """On this disk: nothing to download."""
        return self.source != "registry"

    @property
    def identity(self) -> dict[str, str | int | None]:
        """What a cache key needs: the file's name and, where known, its digest (or its size)."""
        return {"filename": self.filename, "sha256": self.sha256, "size": self.size}


@dataclass(frozen=True)
class Resolution:
    artifact: FrameworkArtifact | None
    problem: str | None = None  # why there is none, in words for the plan table


def pinned(build: FrameworkBuild) -> tuple[str, Version]:
    """(project, exact version) of a cell's framework requirement; only `==X` / `===X` pins qualify."""
    try:
        req = Requirement(build.requirement)
        specs = list(req.specifier)
        if len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
            raise ValueError
        return req.name, Version(specs[0].version)
    except (InvalidRequirement, InvalidVersion, ValueError):
        raise ValueError(
            f"framework requirement {build.requirement!r} is not an exact pin; write it as name==version"
        ) from None


def _platform_fits(platform: str, arch: str) -> bool:
    return platform == "any" or (platform.startswith(("linux_", "manylinux")) and platform.endswith("_" + arch))


def wheel_fits(filename: str, project: str, version: Version, python: str, arch: str) -> bool:
    """True when `filename` is exactly that project + version and installs on CPython `python`/Linux `arch`."""
    try:
        name, file_version, _, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return False
    # Version equality compares local labels too, and str() guards against normalisation surprises.
    if name != canonicalize_name(project) or file_version != version or str(file_version) != str(version):
        return False
    interp, abi = cpython_tags(python)
    nodot = int(python_nodot(python))
    for tag in tags:
        if not _platform_fits(tag.platform, arch):
            continue
        if tag.interpreter == interp and tag.abi in (abi, "none", "abi3"):
            return True
        if tag.abi == "abi3" and tag.interpreter.startswith("cp3") and int(tag.interpreter[2:]) <= nodot:
            return True
        if tag.abi == "none" and tag.interpreter in ("py3", f"py{nodot}"):
            return True
    return False


def _pip_config_files() -> list[Path]:
    files = [
        Path("/etc/pip.conf"),
        Path("/etc/xdg/pip/pip.conf"),
        Path.home() / ".pip/pip.conf",
        Path.home() / ".config/pip/pip.conf",
    ]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    return files


def _pip_setting(option: str, env_var: str) -> list[str]:
    """Every value of a pip option from its config files (global/install/download) and environment."""
    values: list[str] = []
    for path in _pip_config_files():
        if not path.is_file():
            continue
        parser = configparser.ConfigParser()
        try:
            parser.read(path)
        except configparser.Error:
            continue
        for section in ("global", "install", "download"):
            if parser.has_option(section, option):
                values.extend(parser.get(section, option).split())
    values.extend(os.environ.get(env_var, "").split())
    return values


def _local_dirs(values: list[str]) -> list[Path]:
    dirs: list[Path] = []
    for value in values:
        parsed = urlparse(value)
        if parsed.scheme in ("", "file"):
            path = Path(parsed.path if parsed.scheme else value)
            if path.is_dir() and path not in dirs:
                dirs.append(path)
    return dirs


def local_wheel_dirs() -> list[Path]:
    """pip's find-links directories (config files, PIP_FIND_LINKS): the frameworks the default build takes."""
    return _local_dirs(_pip_setting("find-links", "PIP_FIND_LINKS") + os.environ.get("AIACC_FIND_LINKS", "").split())


def local_index_dirs() -> list[Path]:
    """pip's indexes that are directories on this disk (file:// index-url / extra-index-url, PEP 503)."""
    values = _pip_setting("index-url", "PIP_INDEX_URL") + _pip_setting("extra-index-url", "PIP_EXTRA_INDEX_URL")
    return _local_dirs([v for v in values if v.startswith("file:")])


def find_in_local_index(
    cell_build: FrameworkBuild, python: str, arch: str, dirs: list[Path] | None = None
) -> FrameworkArtifact | None:
    """The exact framework wheel in a local PEP 503 index (its page links files on this disk)."""
    project, version = pinned(cell_build)
    for index in local_index_dirs() if dirs is None else dirs:
        page = index / canonicalize_name(project) / "index.html"
        if not page.is_file():
            continue
        for href in page_links(page.read_text(errors="replace")):
            link, fragment = urldefrag(href)
            if urlparse(link).scheme not in ("", "file"):
                continue
            path = (page.parent / urlparse(link).path).resolve()
            if path.is_file() and wheel_fits(path.name, project, version, python, arch):
                return FrameworkArtifact(
                    project=canonicalize_name(project),
                    version=str(version),
                    filename=path.name,
                    location=str(path),
                    size=path.stat().st_size,
                    sha256=fragment.split("=", 1)[1] if fragment.startswith("sha256=") else None,
                    source="local-index",
                )
    return None


def find_local(
    cell_build: FrameworkBuild, python: str, arch: str, dirs: list[Path] | None = None
) -> FrameworkArtifact | None:
    project, version = pinned(cell_build)
    for folder in local_wheel_dirs() if dirs is None else dirs:
        for path in sorted(folder.glob("*.whl")):
            if wheel_fits(path.name, project, version, python, arch):
                return FrameworkArtifact(
                    project=canonicalize_name(project),
                    version=str(version),
                    filename=path.name,
                    location=str(path.resolve()),
                    size=path.stat().st_size,
                    sha256=None,  # hashing 200 MB on every plan costs seconds; name + size identify it here
                    source="local",
                )
    return None


def find_in_registry(cell_build: FrameworkBuild, python: str, arch: str, client: RegistryClient) -> Resolution:
    project, version = pinned(cell_build)
    files = client.files(project, cell_build.index_url)
    if isinstance(files, str):
        return Resolution(None, files)
    for f in files:
        if wheel_fits(f.filename, project, version, python, arch):
            return Resolution(
                FrameworkArtifact(
                    project=canonicalize_name(project),
                    version=str(version),
                    filename=f.filename,
                    location=f.url,
                    size=f.size,
                    sha256=f.sha256,
                    source="registry",
                )
            )
    where = cell_build.index_url or DEFAULT_REGISTRY
    return Resolution(None, f"no {project}=={version} wheel for CPython {python} / {arch} in {where}")


def resolve_framework(
    cell: Cell,
    python: str,
    client: RegistryClient,
    local_dirs: list[Path] | None = None,
    index_dirs: list[Path] | None = None,
) -> Resolution:
    """The exact framework wheel for a cell built with `python`: pip's find-links, local indexes, the registry.

    `local_dirs` / `index_dirs` replace pip's configured find-links / file:// indexes (None: pip's).
    """
    local = find_local(cell.build, python, cell.arch.value, local_dirs)
    if local is None:
        local = find_in_local_index(cell.build, python, cell.arch.value, index_dirs)
    if local is not None:
        return Resolution(local)
    return find_in_registry(cell.build, python, cell.arch.value, client)
