"""A toolkit in the cache: its manifest and the integrity of every file it placed."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .archive import file_sha256
from .probes import nvcc_release
from .spec import MANIFEST, MANIFEST_FORMAT, NVCC_PROFILE, toolkits_dir

# ---- the installed toolkit -------------------------------------------------------------------------


@dataclass(frozen=True)
class InstalledToolkit:
    cuda: str
    nvcc_version: str
    prefix: Path
    suite: str
    packages: tuple[dict[str, object], ...]
    signature: str
    max_host_gcc: int

    @property
    def nvcc(self) -> Path:
        return self.prefix / "bin" / "nvcc"


def read_manifest(prefix: Path) -> dict[str, object] | None:
    path = prefix / MANIFEST
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT else None


def installed(prefix: Path) -> InstalledToolkit | None:
    """The toolkit whose manifest lies in `prefix` (a cheap look: files are not re-hashed)."""
    data = read_manifest(prefix)
    if data is None or not (prefix / "bin" / "nvcc").is_file():
        return None
    return InstalledToolkit(
        cuda=str(data["cuda"]),
        nvcc_version=str(data["nvcc_version"]),
        prefix=prefix,
        suite=str(data["suite"]),
        packages=tuple(data["packages"]),  # type: ignore[arg-type]
        signature=str(data["signature"]),
        max_host_gcc=int(data["max_host_gcc"]),  # type: ignore[call-overload]
    )


def installed_toolkits(root: Path | None = None) -> list[InstalledToolkit]:
    root = root or toolkits_dir()
    if not root.is_dir():
        return []
    found = (installed(p) for p in sorted(root.glob("cuda-*")) if p.is_dir())
    return [t for t in found if t is not None]


def integrity_problems(prefix: Path) -> list[str]:
    """Everything that differs from the manifest: missing or changed files, links, nvcc itself."""
    data = read_manifest(prefix)
    if data is None:
        return [f"no readable {MANIFEST} in {prefix}"]
    problems = []
    files: dict[str, str] = data.get("files", {})  # type: ignore[assignment]
    for rel, sha in files.items():
        path = prefix / rel
        if not path.is_file() or path.is_symlink():
            problems.append(f"missing {rel}")
        elif file_sha256(path) != sha:
            problems.append(f"changed {rel}")
    for rel, link in data.get("symlinks", {}).items():  # type: ignore[union-attr]
        path = prefix / rel
        if not path.is_symlink() or os.readlink(path) != link:
            problems.append(f"link {rel} is not -> {link}")
    profile = prefix / "bin" / "nvcc.profile"
    if not profile.is_file() or profile.read_text() != NVCC_PROFILE:
        problems.append("bin/nvcc.profile differs from the one this tool writes")
    if not problems:
        release = nvcc_release(prefix / "bin" / "nvcc")
        if release is None or release[1] != data.get("nvcc_version"):
            problems.append(f"nvcc --version reports {release}, the manifest {data.get('nvcc_version')}")
    return problems


