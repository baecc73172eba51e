"""Read what a built wheel declares (name, version, requirements, tags) without installing it."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from ..adapters import framework_of_distribution


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


def framework_dependencies(info: WheelInfo) -> list[str]:
    """Requirements on a framework (any distribution an adapter names): a Perseus wheel must have none (it
    never touches the user's framework)."""
    return [str(r) for r in info.requires if framework_of_distribution(canonicalize_name(r.name)) is not None]


def python_api_imports(path: Path) -> dict[str, list[str]]:
    """Per shared library in the wheel, the Python C API symbols it imports (`Py*`, `_Py*`): a library
    without any works under every CPython, whichever interpreter built it."""
    found: dict[str, list[str]] = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if not (name.endswith(".so") or ".so." in name.rsplit("/", 1)[-1]):
                continue
            try:
                elf = ELFFile(io.BytesIO(zf.read(name)))
            except ELFError:
                continue
            dynsym = elf.get_section_by_name(".dynsym")
            if dynsym is None:
                continue
            imported = sorted(
                {
                    sym.name
                    for sym in dynsym.iter_symbols()
                    if sym["st_shndx"] == "SHN_UNDEF" and sym.name.startswith(("Py", "_Py"))
                }
            )
            if imported:
                found[name] = imported
    return found
