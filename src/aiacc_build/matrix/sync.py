"""`matrix sync`: recompute the registry facts (matrix/facts/pypi.yaml) from PyPI or a recording.

For every build in the facts that says `pythons: pypi` or `accelerator: pypi`, sync reads the
release's files (which Pythons and architectures have Linux wheels) and the core metadata of one
wheel per architecture (the CUDA its Requires-Dist pins, e.g. `nvidia-cuda-runtime-cu12==12.8.90`
or `cuda-toolkit[...]==13.0.3`; for a Python-independent wheel also the Python classifiers).
"""

from __future__ import annotations

import datetime as _dt
import difflib
import re
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from ..errors import RegistryError
from ..model import Arch
from .facts import REGISTRY_FILE, pending_registry_requests
from .registry import Registry, WheelFile, parse_metadata
from .schema import RegistryFile, RegistryRelease, RegistryWheels

HEADER = (
    "# Registry facts, written by `aiacc-build matrix sync --write`: do not edit by hand.\n"
    "# Per build: the Pythons its Linux wheels exist for, per architecture, and the CUDA its\n"
    "# Requires-Dist pins (null: it requires no CUDA wheels). Source: the recording named below.\n"
)

_RUNTIME = re.compile(r"^nvidia-cuda-runtime(-cu\d+)?$")
_TOOLKIT = re.compile(r"^cuda-toolkit$")


@dataclass(frozen=True)
class _LinuxWheel:
    file: WheelFile
    arch: Arch
    python: str | None  # "3.11" for a cpXY wheel; None for py3-none


def _linux_wheels(files: list[WheelFile]) -> list[_LinuxWheel]:
    out = []
    for f in files:
        if not f.filename.endswith(".whl"):
            continue
        try:
            _, _, _, tags = parse_wheel_filename(f.filename)
        except InvalidWheelFilename:
            continue
        for arch in Arch:
            if not any("linux" in t.platform and t.platform.endswith("_" + arch.value) for t in tags):
                continue
            pys = {_cpython(t) for t in tags} - {None}
            for py in sorted(pys, key=Version) or [None]:
                out.append(_LinuxWheel(f, arch, py))
    return out


def _cpython(tag: Tag) -> str | None:
    m = re.fullmatch(r"cp(3)(\d+)", tag.interpreter)  # Python 2 wheels are out of every matrix
    if not m or tag.abi.endswith("t"):  # free-threaded builds are a different ABI: not counted
        return None
    return f"{m.group(1)}.{m.group(2)}"


def cuda_from_requires(requires: list[str], arch: Arch, python: str, extras: set[str]) -> tuple[str | None, str | None]:
    """(CUDA major.minor, evidence) from Requires-Dist lines evaluated for Linux/arch/python/extras."""
    found: list[tuple[int, str, str]] = []
    for line in requires:
        req = Requirement(line)
        name = req.name.lower().replace("_", "-")
        if not (_RUNTIME.match(name) or _TOOLKIT.match(name)):
            continue
        if req.marker is not None:
            env = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": arch.value,
                   "python_version": python, "python_full_version": python + ".0"}
            if not any(req.marker.evaluate({**env, "extra": e}) for e in (extras or {""})):
                continue
        versions = [Version(s.version) for s in req.specifier if s.operator in ("==", ">=", "~=", "===")]
        if not versions:
            continue
        v = min(versions)
        found.append((0 if _TOOLKIT.match(name) else 1, f"{v.major}.{v.minor}", line))
    if not found:
        return None, None
    found.sort()
    return found[0][1], found[0][2]


def _classifier_pythons(metadata: str) -> list[str]:
    msg = HeaderParser().parsestr(metadata)
    out = set()
    for c in msg.get_all("Classifier") or []:
        m = re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c.strip())
        if m:
            out.add(m.group(1))
    return sorted(out, key=Version)


def compute(registry: Registry, facts_dir: Path, recorded: str) -> RegistryFile:
    wanted: dict[tuple[str, str], set[Arch]] = {}
    for _req, name, version, arches in pending_registry_requests(facts_dir):
        wanted.setdefault((name, version), set()).update(arches)
    packages: dict[str, dict[str, RegistryRelease]] = {}
    for (name, version), arches in sorted(wanted.items()):
        base = name.split("[")[0]
        extras = set(name[len(base) + 1 : -1].split(",")) if "[" in name else set()
        wheels = _linux_wheels(registry.release_files(base, version))
        per_arch: dict[str, RegistryWheels] = {}
        for arch in sorted(arches, key=lambda a: a.value):
            mine = [w for w in wheels if w.arch is arch]
            if not mine:
                continue
            cp = sorted({w.python for w in mine if w.python}, key=Version)
            # read the metadata of the newest-Python wheel (deterministic; all wheels of a release pin the same CUDA)
            pick = max(mine, key=lambda w: (Version(w.python) if w.python else Version("0"), w.file.filename))
            metadata = registry.wheel_metadata(pick.file)
            requires, _ = parse_metadata(metadata)
            pythons = cp or _classifier_pythons(metadata)
            cuda, evidence = cuda_from_requires(requires, arch, pick.python or (pythons[-1] if pythons else "3.9"), extras)
            per_arch[arch.value] = RegistryWheels(pythons=pythons, requires_cuda=cuda, evidence=evidence, wheel=pick.file.filename)
        packages.setdefault(name, {})[version] = RegistryRelease(wheels=per_arch)
    return RegistryFile(recorded=recorded, packages=packages)


def render(data: RegistryFile) -> str:
    plain = data.model_dump(mode="json")
    return HEADER + yaml.safe_dump(plain, sort_keys=True, default_flow_style=None, width=120, allow_unicode=True)


def latest_recording(registry_dir: Path) -> Path:
    folders = sorted(p for p in registry_dir.glob("*") if p.is_dir() and re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.name))
    if not folders:
        raise RegistryError(f"no recording under {registry_dir}; make one with `aiacc-build matrix sync --record`")
    return folders[-1]


def today() -> str:
    return _dt.date.today().isoformat()


def diff(old: str, new: str, path: Path) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"{path} (committed)", f"{path} (sync)"))


def registry_file_path(facts_dir: Path) -> Path:
    return facts_dir / REGISTRY_FILE
