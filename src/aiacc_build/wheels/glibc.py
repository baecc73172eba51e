"""What glibc a wheel's shared objects need, read from their ELF symbol version requirements
(`.gnu.version_r`: the GLIBC_x.y versions they reference), and whether the wheel's platform tag keeps
that promise. auditwheel decides a tag the same way; this check reads the published file again, so a
re-tag that promises more than the binary keeps is caught after the fact too."""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .repair import platform_glibc, wheel_platform

_GLIBC = re.compile(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?$")


@dataclass(frozen=True)
class GlibcNeed:
    member: str  # the shared object inside the wheel
    glibc: tuple[int, int]  # the newest GLIBC_x.y it references
    symbols_version: str  # e.g. "GLIBC_2.34"


def glibc_needs(data: bytes) -> tuple[int, int] | None:
    """The newest GLIBC_x.y an ELF object references (None: not ELF, or none referenced)."""
    try:
        elf = ELFFile(io.BytesIO(data))
    except ELFError:
        return None
    section = elf.get_section_by_name(".gnu.version_r")
    newest: tuple[int, int] | None = None
    if section is None:
        return None
    for _, auxiliaries in section.iter_versions():
        for aux in auxiliaries:
            match = _GLIBC.match(aux.name)
            if match:
                version = (int(match[1]), int(match[2]))
                newest = version if newest is None or version > newest else newest
    return newest


def wheel_glibc_needs(wheel: Path) -> list[GlibcNeed]:
    """Every shared object of the wheel with the newest glibc it needs."""
    out = []
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if not re.search(r"\.so(\.\d+)*$", name):
                continue
            need = glibc_needs(zf.read(name))
            if need is not None:
                out.append(GlibcNeed(name, need, f"GLIBC_{need[0]}.{need[1]}"))
    return out


def broken_promise(wheel: Path) -> str | None:
    """Why the wheel's platform tag promises a glibc its shared objects do not keep; None when it keeps it."""
    platform = wheel_platform(wheel.name)
    promise = platform_glibc(platform)
    if promise is None:  # linux_*: no promise
        return None
    over = [n for n in wheel_glibc_needs(wheel) if n.glibc > promise]
    if not over:
        return None
    worst = max(over, key=lambda n: n.glibc)
    return (f"{wheel.name}: tagged {platform} (glibc {promise[0]}.{promise[1]}), but {worst.member} needs "
            f"{worst.symbols_version}" + (f" (and {len(over) - 1} more objects over the promise)" if len(over) > 1 else ""))
