"""`toolkit fetch`: resolve, download, extract and check a toolkit in a staging folder, then rename
it into place whole."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from filelock import FileLock

from .archive import Archive, IndexEntry, resolve
from .extract import Placed, extract_placements
from .installed import InstalledToolkit, installed, integrity_problems
from .probes import check_toolkit, host_compiler
from .spec import (
    DEFAULT_KEYRING,
    DEFAULT_MIRROR,
    MANIFEST,
    MANIFEST_FORMAT,
    NVCC_PROFILE,
    Progress,
    Step,
    UnknownToolkitError,
    toolkit_spec,
    toolkits_dir,
)


@dataclass(frozen=True)
class FetchResult:
    toolkit: InstalledToolkit
    fetched: bool  # False: it was already there and intact
    downloaded_bytes: int
    seconds: dict[str, float]


@contextlib.contextmanager
def _staging(root: Path, name: str) -> Iterator[Path]:
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=root))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _install(staging: Path, target: Path) -> None:
    """Rename the complete tree into place; a broken older tree is moved aside first, then removed."""
    old = None
    if target.exists() or target.is_symlink():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        target.rename(old)
    staging.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def fetch_toolkit(
    cuda: str,
    root: Path | None = None,
    mirror: str = DEFAULT_MIRROR,
    keyring: Path | None = DEFAULT_KEYRING,
    keep_downloads: bool = False,
    progress: Progress | None = None,
    step: Step | None = None,
) -> FetchResult:
    """Provision CUDA `cuda` under `root` (default: toolkits_dir()); a no-op when it is there and intact.
    `keyring=None` skips the InRelease signature check (sha256 only)."""
    spec = toolkit_spec(cuda)
    say = step or (lambda _m: None)
    root = (root or toolkits_dir()).resolve()
    root.mkdir(parents=True, exist_ok=True)
    target = root / spec.dirname
    seconds: dict[str, float] = {}
    with FileLock(str(root / f"{spec.dirname}.lock")):
        present = installed(target)
        if present is not None:
            say(f"checking {target}")
            started = time.perf_counter()
            problems = integrity_problems(target)
            seconds["verify"] = time.perf_counter() - started
            if not problems:
                return FetchResult(toolkit=present, fetched=False, downloaded_bytes=0, seconds=seconds)
            say(f"{target} is damaged ({problems[0]}{' ...' if len(problems) > 1 else ''}): provisioning again")
        if platform.machine() != spec.machine:
            raise UnknownToolkitError(f"the CUDA {cuda} recipe is for {spec.machine}, this machine is {platform.machine()}")
        cxx = host_compiler(spec.max_host_gcc)
        archive = Archive(mirror=mirror)
        started = time.perf_counter()
        resolved = resolve(spec, archive, keyring, say)
        seconds["index"] = time.perf_counter() - started
        downloads = root / "downloads"
        started = time.perf_counter()
        downloaded = 0
        debs: dict[str, Path] = {}
        for pkg in resolved.packages:
            dest = downloads / pkg.filename.rsplit("/", 1)[-1]
            if archive.download(pkg.filename, dest, IndexEntry(pkg.sha256, pkg.size), pkg.name, progress):
                downloaded += pkg.size
            debs[pkg.name] = dest
        seconds["download"] = time.perf_counter() - started
        with _staging(root, spec.dirname) as staging:
            started = time.perf_counter()
            placed = Placed()
            for pkg in resolved.packages:
                say(f"extracting {pkg.name} {pkg.version}")
                mine = tuple(p for p in spec.placements if p.package == pkg.name)
                extract_placements(debs[pkg.name], mine, staging, placed)
            (staging / "bin" / "nvcc.profile").write_text(NVCC_PROFILE)
            staging.chmod(0o755)  # mkdtemp made it private
            seconds["extract"] = time.perf_counter() - started
            say("checking the toolkit: nvcc --version, one kernel compiled and linked")
            started = time.perf_counter()
            nvcc_version = check_toolkit(staging, spec.cuda, cxx)
            seconds["check"] = time.perf_counter() - started
            manifest = {
                "format": MANIFEST_FORMAT,
                "cuda": spec.cuda,
                "nvcc_version": nvcc_version,
                "suite": spec.suite,
                "mirror": mirror,
                "signature": resolved.signature,
                "max_host_gcc": spec.max_host_gcc,
                "packages": [{k: v for k, v in asdict(p).items() if k != "depends"} for p in resolved.packages],
                "files": dict(sorted(placed.files.items())),
                "symlinks": dict(sorted(placed.symlinks.items())),
            }
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
            _install(staging, target)
        if not keep_downloads:
            for deb in debs.values():
                deb.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                downloads.rmdir()
    toolkit = installed(target)
    assert toolkit is not None
    return FetchResult(toolkit=toolkit, fetched=True, downloaded_bytes=downloaded, seconds=seconds)
