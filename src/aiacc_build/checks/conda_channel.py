"""A local stand-in `conda-forge` channel whose packages install for real: `python` is one of this
machine's pyenv interpreters repackaged as a conda package, `pip` is a noarch package made from the
newest pip wheel those interpreters bundle (ensurepip). Nothing else: the rendered files' conda part is
`python=3.X` and `pip`. Other packages (metadata-only stubs: checks/conda_stubs.py) join a channel
through `write_channel(extra=...)`.

A conda `python` package is the interpreter's prefix as files plus info/index.json and
info/paths.json. pyenv's interpreters hard-code their own prefix (the executable's RUNPATH, the build
settings in sysconfigdata); paths.json declares those files with the prefix as placeholder, in
binary or text mode as conda-build does, and the installer rewrites them for the new prefix
(libpython excepted, see `_path_entry`). Binary rewriting pads with NULs, so a target prefix must be
no longer than the pyenv prefix (`max_prefix_length`): install into short paths.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError
from ..hashing import bytes_sha256

SUBDIR = "linux-64"

# not part of a minimal interpreter: the test suite, GUI toolkits, caches, and whatever pyenv's
# pip put into site-packages (conda's pip is its own package)
_SKIPPED_DIRS = {"test", "idlelib", "tkinter", "turtledemo", "__pycache__", "site-packages"}
# libpython3.11.so.1.0; before 3.8 the ABI flag is part of the name: libpython3.6m.so.1.0
_LIBPYTHON = re.compile(r"lib/libpython3\.\d+m?\.so(\.[\d.]+)?")


@dataclass(frozen=True)
class StandinPackage:
    filename: str
    subdir: str
    record: dict  # its repodata.json entry


def _python_files(root: Path, minor: str) -> list[Path]:
    keep = [root / "bin" / f"python{minor}", root / "bin" / "python3", root / "bin" / "python"]
    keep = [p for p in keep if p.is_file() or p.is_symlink()]
    for top in ("lib", "include"):
        for folder, dirs, files in os.walk(root / top):
            rel_parts = Path(folder).relative_to(root).parts
            # lib/ holds libpython and lib/python3.X; other top-level folders of lib/ are not Python's
            if top == "lib" and len(rel_parts) == 1:
                dirs[:] = [d for d in dirs if d in (f"python{minor}", "pkgconfig")]
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
            keep.extend(Path(folder) / f for f in sorted(files) if not f.endswith((".pyc", ".a")))
    site = root / "lib" / f"python{minor}" / "site-packages" / "README.txt"
    if site.is_file():
        keep.append(site)  # keeps the (empty) site-packages folder in the package
    return keep


def _path_entry(rel: str, path: Path, placeholder: str) -> dict:
    if path.is_symlink():
        return {"_path": rel, "path_type": "softlink"}
    data = path.read_bytes()
    entry = {"_path": rel, "path_type": "hardlink", "sha256": bytes_sha256(data), "size_in_bytes": len(data)}
    # libpython is left as built: its linker merged PY_VERSION ("3.11.7") into the tail of the prefix
    # string, so rewriting the prefix would clobber sys.version. Its compiled-in prefix is only
    # getpath's fallback; the prefix is found from the executable's location.
    if placeholder.encode() in data and not _LIBPYTHON.fullmatch(rel):
        entry["prefix_placeholder"] = placeholder
        entry["file_mode"] = "binary" if b"\0" in data else "text"
    return entry


def _tar_bz2(out: Path, members: list[tuple[str, Path | bytes]]) -> None:
    with tarfile.open(out, "w:bz2", compresslevel=1) as tar:
        for name, source in members:
            if isinstance(source, bytes):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(source), 0o644
                tar.addfile(info, io.BytesIO(source))
            else:
                tar.add(str(source), arcname=name, recursive=False)


def write_package(out_dir: Path, subdir: str, filename: str, index: dict, paths: list[dict],
                  files: list[tuple[str, Path | bytes]], extra_info: dict[str, bytes] | None = None) -> StandinPackage:
    """A .tar.bz2 conda package under out_dir/subdir: info/index.json (`index`), info/paths.json
    (`paths`), `extra_info` and `files`; returns it with its repodata entry (index + digests, size)."""
    info = {"info/index.json": json.dumps(index, indent=2).encode(),
            "info/paths.json": json.dumps({"paths": paths, "paths_version": 1}, indent=2).encode(), **(extra_info or {})}
    target = out_dir / subdir / filename
    target.parent.mkdir(parents=True, exist_ok=True)
    _tar_bz2(target, [*info.items(), *files])
    data = target.read_bytes()
    record = dict(index, md5=hashlib.md5(data).hexdigest(), sha256=bytes_sha256(data), size=len(data))
    return StandinPackage(filename, subdir, record)


def python_package(root: Path, out_dir: Path) -> StandinPackage:
    """The pyenv interpreter installed at `root` (e.g. ~/.pyenv/versions/3.11.7) as conda's `python`."""
    version = root.name
    minor = ".".join(version.split(".")[:2])
    if not (root / "bin" / f"python{minor}").is_file():
        raise ConfigurationError(f"{root} holds no python{minor}: not a pyenv interpreter")
    placeholder = str(root)
    paths, files = [], []
    for path in _python_files(root, minor):
        rel = path.relative_to(root).as_posix()
        paths.append(_path_entry(rel, path, placeholder))
        files.append((rel, path))
    index = dict(name="python", version=version, build="standin_0", build_number=0, depends=[],
                 subdir=SUBDIR, arch="x86_64", platform="linux", license="PSF-2.0", timestamp=0)
    return write_package(out_dir, SUBDIR, f"python-{version}-standin_0.tar.bz2", index, paths, files)


def pip_package(wheel: Path, out_dir: Path) -> StandinPackage:
    """pip's wheel as a noarch python package: its files under site-packages/, the `pip` command as an
    entry point (info/link.json) the installer writes for the environment's Python."""
    version = wheel.name.split("-")[1]
    paths, files = [], []
    requires_python = ">=3.7"
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"pip-{version}.dist-info/METADATA").decode()
        found = re.search(r"^Requires-Python:\s*(\S+)\s*$", metadata, re.M)
        if found:
            requires_python = found.group(1)  # conda's version specs read PEP 440's `>=3.7` and `!=3.0.*` alike
        for name in sorted(archive.namelist()):
            if name.endswith("/"):
                continue
            data = archive.read(name)
            rel = f"site-packages/{name}"
            paths.append({"_path": rel, "path_type": "hardlink", "sha256": bytes_sha256(data), "size_in_bytes": len(data)})
            files.append((rel, data))
    link = {"noarch": {"type": "python", "entry_points": ["pip = pip._internal.cli.main:main"]},
            "package_metadata_version": 1}
    index = dict(name="pip", version=version, build="pyh_standin_0", build_number=0, depends=[f"python {requires_python}"],
                 subdir="noarch", noarch="python", license="MIT", timestamp=0)
    return write_package(out_dir, "noarch", f"pip-{version}-pyh_standin_0.tar.bz2", index, paths, files,
                  {"info/link.json": json.dumps(link).encode()})


def bundled_pip_wheel(root: Path) -> Path:
    minor = ".".join(root.name.split(".")[:2])
    found = sorted((root / "lib" / f"python{minor}" / "ensurepip" / "_bundled").glob("pip-*.whl"))
    if not found:
        raise ConfigurationError(f"{root} bundles no pip wheel (ensurepip)")
    return found[-1]


def _wheel_version(wheel: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in wheel.name.split("-")[1].split(".") if part.isdigit())


def write_channel(pythons: list[Path], root: Path, name: str = "conda-forge",
                  extra: tuple[StandinPackage, ...] = ()) -> tuple[str, list[StandinPackage]]:
    """A channel `name` under `root` with a `python` per pyenv prefix in `pythons`, each pip those
    interpreters bundle (its Requires-Python its `depends`: an old Python gets the pip it runs) and the
    `extra` packages already written under root/name; returns the channel alias (file://) and the packages."""
    channel = root / name
    packages = [python_package(p, channel) for p in pythons]
    wheels = {w.name: w for w in sorted((bundled_pip_wheel(p) for p in pythons), key=_wheel_version)}
    packages.extend(pip_package(w, channel) for w in wheels.values())
    packages.extend(extra)
    write_repodata(channel, packages)
    return f"file://{root}/", packages


def write_repodata(channel: Path, packages: list[StandinPackage]) -> None:
    """channel/<subdir>/repodata.json for linux-64 and noarch (both exist, perhaps empty: conda asks for both)."""
    for subdir in (SUBDIR, "noarch"):
        entries = {p.filename: p.record for p in packages if p.subdir == subdir}
        (channel / subdir).mkdir(parents=True, exist_ok=True)
        (channel / subdir / "repodata.json").write_text(
            json.dumps({"info": {"subdir": subdir}, "packages": entries, "repodata_version": 1}))


def max_prefix_length(pythons: list[Path]) -> int:
    """The longest target prefix the binary prefix rewriting of these `python` packages allows."""
    return min(len(str(p)) for p in pythons)
