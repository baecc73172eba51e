"""Read what a built wheel declares (name, version, requirements, tags) without installing it."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename


@dataclass(frozen=True)
class WheelInfo:
    name: str
    version: str
    requires: tuple[Requirement, ...]
    requires_python: str | None
    tags: tuple[str, ...]  # from the WHEEL file, e.g. ("cp311-cp311-linux_x86_64",)
    files: tuple[str, ...]


def read_wheel(path: Path) -> WheelInfo:
    name, _, _, _ = parse_wheel_filename(path.name)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        dist_info = next(
            n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info") and n.endswith("/METADATA")
        )
        metadata = HeaderParser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
        wheel = HeaderParser().parsestr(zf.read(f"{dist_info}/WHEEL").decode())
    return WheelInfo(
        name=canonicalize_name(metadata["Name"]),
        version=metadata["Version"],
        requires=tuple(Requirement(r) for r in metadata.get_all("Requires-Dist") or []),
        requires_python=metadata.get("Requires-Python"),
        tags=tuple(wheel.get_all("Tag") or []),
        files=tuple(names),
    )


def framework_dependencies(
    info: WheelInfo, frameworks: tuple[str, ...] = ("torch", "tensorflow", "tensorflow-cpu", "tensorflow-gpu", "mxnet")
) -> list[str]:
    """Requirements on a framework: a Perseus wheel must have none (it never touches the user's framework)."""
    return [str(r) for r in info.requires if canonicalize_name(r.name).startswith(frameworks)]
