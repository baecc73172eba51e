"""Extraction of a .deb's layout members (dpkg-deb --fsys-tarfile) into the toolkit tree."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..hashing import HashingWriter
from .spec import CHUNK, ArchiveError, Placement, ToolkitHostError

# ---- extraction and layout -------------------------------------------------------------------------


@dataclass
class Placed:
    files: dict[str, str] = field(default_factory=dict)  # layout path -> sha256
    symlinks: dict[str, str] = field(default_factory=dict)  # layout path -> link target (same folder)


def _safe_layout_path(path: str) -> str:
    parts = Path(path).parts
    if Path(path).is_absolute() or ".." in parts or not parts:
        raise ArchiveError(f"refusing a member that would land outside the toolkit: {path}")
    return path


def extract_placements(deb: Path, placements: tuple[Placement, ...], root: Path, placed: Placed) -> None:
    """Stream the data archive of `deb` (dpkg-deb --fsys-tarfile) and write the members the placements
    map into `root`; every placement must match at least one member (else the package changed)."""
    dpkg_deb = shutil.which("dpkg-deb")
    if dpkg_deb is None:
        raise ToolkitHostError("dpkg-deb is not installed (apt-get install dpkg)")
    matched: set[Placement] = set()
    by_member: dict[str, str] = {}
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen([dpkg_deb, "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=errors)
        assert proc.stdout is not None
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                for member in tar:
                    name = member.name.removeprefix("./")
                    if member.isdir():
                        continue
                    hit = next(((p, d) for p in placements if (d := p.destination(name)) is not None), None)
                    if hit is None:
                        continue
                    placement, dest = hit
                    matched.add(placement)
                    dest = _safe_layout_path(dest)
                    target = root / dest
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if member.issym():
                        if "/" in member.linkname:  # only links within one folder keep their meaning here
                            raise ArchiveError(f"{deb.name}: {name} links to {member.linkname}, outside its folder")
                        target.unlink(missing_ok=True)
                        target.symlink_to(member.linkname)
                        placed.symlinks[dest] = member.linkname
                    elif member.islnk():
                        source = by_member.get(member.linkname.removeprefix("./"))
                        if source is None:
                            raise ArchiveError(f"{deb.name}: {name} is a hard link to an unplaced {member.linkname}")
                        shutil.copy2(root / source, target)
                        placed.files[dest] = placed.files[source]
                    elif member.isfile():
                        fh = tar.extractfile(member)
                        assert fh is not None
                        with target.open("wb") as out:
                            writer = HashingWriter(out)
                            for chunk in iter(lambda: fh.read(CHUNK), b""):
                                writer.write(chunk)
                        target.chmod(0o755 if member.mode & 0o111 else 0o644)
                        placed.files[dest] = writer.hexdigest()
                    else:
                        raise ArchiveError(f"{deb.name}: {name} is neither a file nor a link")
                    by_member[name] = dest
        except tarfile.TarError as exc:
            raise ArchiveError(f"{deb.name}: unreadable data archive ({exc})") from exc
        finally:
            proc.stdout.close()
            rc = proc.wait()
        if rc != 0:
            errors.seek(0)
            raise ToolkitHostError(f"dpkg-deb --fsys-tarfile {deb.name} failed: {errors.read().decode()[-400:]}")
    missing = [p.source for p in placements if p not in matched]
    if missing:
        raise ArchiveError(f"{deb.name} holds nothing at {', '.join(missing)}: the package layout changed")

