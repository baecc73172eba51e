"""A client of Debian's archive: the signed InRelease (gpgv), the Packages indexes it hashes, the
packages a spec needs (relations checked) and their downloads, each checked by SHA256 and size."""

from __future__ import annotations

import lzma
import operator
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import requests
from debian import deb822
from debian.debian_support import Version as DebianVersion

from ..hashing import HashingWriter, bytes_sha256, file_sha256
from .spec import (
    CHUNK,
    DEFAULT_MIRROR,
    HTTP_TIMEOUT_S,
    ArchiveError,
    Progress,
    Step,
    ToolkitHostError,
    ToolkitSpec,
)

# ---- the archive's indexes -------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexEntry:
    sha256: str
    size: int


@dataclass(frozen=True)
class DebPackage:
    name: str
    version: str
    filename: str  # pool path relative to the mirror root
    sha256: str
    size: int
    source: str = ""  # the Debian source package (its name alone, without a version)
    depends: str = ""


@dataclass(frozen=True)
class ReleaseIndex:
    suite: str
    codename: str
    acquire_by_hash: bool
    files: dict[str, IndexEntry]


def parse_release(text: str) -> ReleaseIndex:
    """The fields of a Release file (the signed part of InRelease) that provisioning uses."""
    release = deb822.Release(text)
    if "SHA256" not in release:
        raise ArchiveError("the Release file has no SHA256 list")
    files = {f["name"]: IndexEntry(sha256=f["sha256"], size=int(f["size"])) for f in release["SHA256"]}
    return ReleaseIndex(
        suite=release.get("Suite", ""),
        codename=release.get("Codename", ""),
        acquire_by_hash=release.get("Acquire-By-Hash", "no").strip().lower() == "yes",
        files=files,
    )


def parse_packages(text: str, names: set[str] | None = None) -> dict[str, list[DebPackage]]:
    """The stanzas of a Packages index by package name (only those in `names`, when given: an index of
    main holds tens of thousands, and a stanza's first line names its package)."""
    out: dict[str, list[DebPackage]] = {}
    for stanza in re.split(r"\n\s*\n", text):
        if not stanza.strip():
            continue
        first = stanza.lstrip("\n").split("\n", 1)[0]
        if names is not None and first.startswith("Package:") and first[8:].strip() not in names:
            continue
        para = deb822.Packages(stanza)
        try:
            pkg = DebPackage(
                name=para["Package"],
                version=para["Version"],
                filename=para["Filename"],
                sha256=para["SHA256"],
                size=int(para["Size"]),
                source=para.get("Source", para["Package"]).split(" ")[0],
                depends=para.get("Depends", ""),
            )
        except (KeyError, ValueError) as exc:
            raise ArchiveError(f"a Packages stanza lacks a field ({exc}): {stanza[:200]}") from exc
        if names is None or pkg.name in names:
            out.setdefault(pkg.name, []).append(pkg)
    return out


_RELATIONS: dict[str, Callable[[object, object], bool]] = {
    "=": operator.eq,
    ">=": operator.ge,
    "<=": operator.le,
    ">>": operator.gt,
    "<<": operator.lt,
}


def unmet_relations(pkg: DebPackage, chosen: dict[str, DebPackage]) -> list[str]:
    """The versioned Depends of `pkg` on other chosen packages (single alternatives) that they do not meet."""
    unmet: list[str] = []
    if not pkg.depends.strip():
        return unmet
    for alternatives in deb822.PkgRelation.parse_relations(pkg.depends):
        if len(alternatives) != 1 or not alternatives[0].get("version"):
            continue
        name, (op, version) = alternatives[0]["name"], alternatives[0]["version"]
        other = chosen.get(name)
        if other is None:
            continue
        if not _RELATIONS[op](DebianVersion(other.version), DebianVersion(version)):  # dpkg's ordering
            unmet.append(f"{pkg.name} {pkg.version} requires {name} ({op} {version}), the index has {other.version}")
    return unmet


def resolve_packages(spec: ToolkitSpec, indexes: dict[str, dict[str, list[DebPackage]]]) -> list[DebPackage]:
    """The newest stanza of each package the spec needs (`indexes`: by index path, then by name), checked:
    every binary of the toolkit's source is CUDA `spec.cuda`, and their versioned Depends on each other
    hold (one consistent toolkit, never a mix of two uploads)."""
    chosen: dict[str, DebPackage] = {}
    for wanted in spec.packages:
        candidates = indexes.get(wanted.index_path, {}).get(wanted.name)
        if not candidates:
            raise ArchiveError(f"{spec.suite} {wanted.index_path} has no package {wanted.name}")
        pkg = max(candidates, key=lambda p: DebianVersion(p.version))
        upstream = DebianVersion(pkg.version).upstream_version or ""
        if pkg.source == spec.toolkit_source and not upstream.startswith(spec.cuda + "."):
            raise ArchiveError(
                f"{spec.suite}'s {pkg.name} is {pkg.version}, not CUDA {spec.cuda}: the suite moved on; "
                f"update the recipe of CUDA {spec.cuda} in {__name__}"
            )
        chosen[wanted.name] = pkg
    unmet = [problem for pkg in chosen.values() for problem in unmet_relations(pkg, chosen)]
    if unmet:
        raise ArchiveError("the index is inconsistent: " + "; ".join(unmet))
    return [chosen[p.name] for p in spec.packages]


def verify_signature(inrelease: bytes, keyring: Path) -> str:
    """The signed text of an InRelease file, verified by gpgv against `keyring` (never the unsigned rest)."""
    gpgv = shutil.which("gpgv")
    if gpgv is None:
        raise ToolkitHostError("gpgv is not installed (apt-get install gpgv); or pass --no-signature-check")
    if not keyring.is_file():
        raise ToolkitHostError(
            f"no keyring {keyring} (apt-get install debian-archive-keyring); or pass --no-signature-check"
        )
    with tempfile.TemporaryDirectory(prefix="aiacc-inrelease-") as tmp:
        signed, payload = Path(tmp) / "InRelease", Path(tmp) / "Release"
        signed.write_bytes(inrelease)
        proc = subprocess.run(
            [gpgv, "--keyring", str(keyring), "--output", str(payload), str(signed)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not payload.is_file():
            detail = " ".join(proc.stderr.split())[-400:]
            raise ArchiveError(f"the InRelease signature does not verify against {keyring}: {detail}")
        return payload.read_text(encoding="utf-8")


def unsigned_payload(inrelease: bytes) -> str:
    """The Release text inside an InRelease file, signature NOT checked (--no-signature-check)."""
    text = inrelease.decode("utf-8")
    if not text.startswith("-----BEGIN PGP SIGNED MESSAGE-----"):
        return text
    body = text.split("\n\n", 1)[1]
    body = body.split("\n-----BEGIN PGP SIGNATURE-----", 1)[0]
    return "\n".join(line[2:] if line.startswith("- ") else line for line in body.split("\n")) + "\n"


# ---- downloads -------------------------------------------------------------------------------------


@dataclass
class Archive:
    """One Debian mirror, read over HTTP; every byte kept is checked against a signed hash."""

    mirror: str = DEFAULT_MIRROR
    session: requests.Session = field(default_factory=requests.Session)

    def url(self, path: str) -> str:
        return f"{self.mirror.rstrip('/')}/{path.lstrip('/')}"

    def get(self, path: str) -> bytes:
        url = self.url(path)
        try:
            resp = self.session.get(url, timeout=HTTP_TIMEOUT_S)
        except requests.RequestException as exc:
            raise ArchiveError(f"cannot reach {url}: {exc}; check the network or pass --mirror") from exc
        if resp.status_code != 200:
            raise ArchiveError(f"{url} answered HTTP {resp.status_code}")
        return resp.content

    def download(self, path: str, dest: Path, entry: IndexEntry, label: str, progress: Progress | None) -> bool:
        """Fetch `path` into `dest`, verified; False when `dest` already held exactly that file."""
        if dest.is_file() and dest.stat().st_size == entry.size and file_sha256(dest) == entry.sha256:
            if progress:
                progress(label, entry.size, entry.size)
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        url = self.url(path)
        try:
            with self.session.get(url, stream=True, timeout=HTTP_TIMEOUT_S) as resp:
                if resp.status_code != 200:
                    raise ArchiveError(f"{url} answered HTTP {resp.status_code}")
                with part.open("wb") as fh:
                    writer = HashingWriter(fh)
                    for chunk in resp.iter_content(CHUNK):
                        writer.write(chunk)
                        if progress:
                            progress(label, writer.size, entry.size)
        except requests.RequestException as exc:
            part.unlink(missing_ok=True)
            raise ArchiveError(f"download of {url} failed: {exc}") from exc
        if writer.size != entry.size or writer.hexdigest() != entry.sha256:
            part.unlink(missing_ok=True)
            raise ArchiveError(
                f"{url}: got {writer.size} bytes with sha256 {writer.hexdigest()[:16]}..., the index says "
                f"{entry.size} bytes, {entry.sha256[:16]}...: a corrupted or tampered download; retry or pass --mirror"
            )
        part.replace(dest)
        return True


@dataclass(frozen=True)
class ResolvedToolkit:
    spec: ToolkitSpec
    packages: tuple[DebPackage, ...]
    signature: str  # how the index was authenticated, for the manifest and the report

    @property
    def download_size(self) -> int:
        return sum(p.size for p in self.packages)


def fetch_index(archive: Archive, suite: str, release: ReleaseIndex, index_path: str) -> str:
    """A Packages index (its .xz, by hash when the archive offers it), checked against the signed Release."""
    compressed = index_path + ".xz"
    entry = release.files.get(compressed)
    if entry is None:
        raise ArchiveError(f"the {suite} Release lists no {compressed}")
    folder = compressed.rsplit("/", 1)[0]
    # by-hash: exactly the file the signed Release names, even if the index is updated while we read
    path = f"{folder}/by-hash/SHA256/{entry.sha256}" if release.acquire_by_hash else compressed
    data = archive.get(f"dists/{suite}/{path}")
    if bytes_sha256(data) != entry.sha256 or len(data) != entry.size:
        raise ArchiveError(f"dists/{suite}/{path} does not match the sha256 the InRelease gives for {compressed}")
    try:
        return lzma.decompress(data).decode("utf-8")
    except (lzma.LZMAError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"{compressed} does not decompress: {exc}") from exc


def resolve(
    spec: ToolkitSpec, archive: Archive, keyring: Path | None, step: Step | None = None
) -> ResolvedToolkit:
    """Read the suite's signed InRelease and its Packages index; pick and cross-check the spec's packages.
    `keyring=None` skips the signature check (hashes only)."""
    say = step or (lambda _m: None)
    say(f"reading {spec.suite} InRelease")
    inrelease = archive.get(f"dists/{spec.suite}/InRelease")
    if keyring is None:
        text, signature = unsigned_payload(inrelease), "NOT checked (--no-signature-check): sha256 only"
    else:
        text, signature = verify_signature(inrelease, keyring), f"InRelease verified by gpgv with {keyring}"
    release = parse_release(text)
    if spec.suite not in (release.codename, release.suite):
        raise ArchiveError(f"asked for suite {spec.suite}, the InRelease is {release.codename} ({release.suite})")
    indexes = {}
    for index_path in spec.index_paths:
        say(f"reading {index_path}")
        names = {p.name for p in spec.packages if p.index_path == index_path}
        indexes[index_path] = parse_packages(fetch_index(archive, spec.suite, release, index_path), names)
    packages = resolve_packages(spec, indexes)
    return ResolvedToolkit(spec=spec, packages=tuple(packages), signature=signature)

