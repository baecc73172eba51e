"""Real CUDA toolkits provisioned from Debian's archive into this tool's cache, never into /usr.

`aiacc-build toolkit fetch 12.4` reads the suite's InRelease (its signature checked with gpgv against
Debian's archive keyring), the component's Packages index (fetched by its SHA256 from InRelease), then
downloads the few .deb files a compile needs (each checked against the index's SHA256 and size) and
streams only the members the layout uses out of `dpkg-deb --fsys-tarfile` into a standard CUDA layout:

    <toolkits dir>/cuda-12.4/
      bin/nvcc, bin/nvcc.profile, bin/{ptxas,fatbinary,nvlink,cudafe++,cuobjdump,...}, bin/crt/*.stub
      nvvm/bin/cicc, nvvm/libdevice/libdevice.10.bc
      include/    the CUDA headers (cuda_runtime.h, cublas_v2.h, thrust, cub, ...)
      lib64/      libcudart_static.a, libcudadevrt.a, libculibos.a, libcudart.so*, stubs/libcuda.so
      toolkit.json  what was fetched (packages, hashes, signature) and the sha256 of every file placed

Debian splits a toolkit: nvcc and cicc under /usr/lib/nvidia-cuda-toolkit, the other tools in /usr/bin,
headers in /usr/include, libraries in /usr/lib/<triplet>; the placements of each spec map those paths.
Only what a compile needs is written (nvidia-cuda-dev alone unpacks to 2.5 GB of static math libraries).
The nvcc.profile is relative to its own folder ($(_HERE_)), so the tree is assembled in a temporary
folder, checked (nvcc --version, one kernel compiled and linked against the static runtime) and renamed
into place whole: a toolkit folder is either complete or absent.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import lzma
import operator
import os
import platform
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import requests
from debian import deb822
from debian.debian_support import Version as DebianVersion
from filelock import FileLock

from ..errors import ConfigurationError, HostServiceError, RegistryError
from .cache import DEFAULT_CACHE_DIR

DEFAULT_MIRROR = "http://deb.debian.org/debian"  # plain HTTP, as apt uses it: the signature and hashes protect it
DEFAULT_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
MANIFEST = "toolkit.json"
MANIFEST_FORMAT = 1
HTTP_TIMEOUT_S = 60
CHUNK = 1 << 20

# progress(label, done_bytes, total_bytes): one call per chunk of a download
Progress = Callable[[str, int, int], None]
# step(message): one call per stage of the work (resolving, extracting, checking)
Step = Callable[[str], None]


class ArchiveError(RegistryError):
    """Debian's archive could not be read, or what it served does not verify (signature, hash, index)."""


class ToolkitHostError(HostServiceError):
    """A host tool the provisioning runs (dpkg-deb, gpgv) is missing or failed."""


class UnknownToolkitError(ConfigurationError):
    """No provisioning recipe for the requested CUDA version."""


class ToolkitBuildError(HostServiceError):
    """The assembled toolkit does not work (nvcc does not run, or cannot compile and link a kernel)."""


@dataclass(frozen=True)
class Placement:
    """Where package members go in the layout. `source` ending in "/" maps that whole folder (recursively)
    into the folder `target`; otherwise `source` is a glob over full member paths and each match goes into
    the folder `target` under its own name."""

    package: str
    source: str
    target: str

    def destination(self, member: str) -> str | None:
        if self.source.endswith("/"):
            if member.startswith(self.source) and member != self.source:
                return self.target + member[len(self.source) :]
            return None
        if fnmatch.fnmatchcase(member, self.source):
            return self.target + member.rsplit("/", 1)[-1]
        return None


@dataclass(frozen=True)
class SpecPackage:
    name: str
    component: str  # "non-free", "main"
    deb_arch: str  # "amd64", or "all" for architecture-independent packages (headers)

    @property
    def index_path(self) -> str:
        """Its Packages index's path in the Release file."""
        return f"{self.component}/binary-{self.deb_arch}/Packages"


@dataclass(frozen=True)
class ToolkitSpec:
    cuda: str  # "12.4"
    suite: str  # Debian suite (codename)
    toolkit_source: str  # the Debian source package whose binaries must all be CUDA `cuda`
    machine: str  # platform.machine() it runs on
    packages: tuple[SpecPackage, ...]  # what the placements read, nothing more
    placements: tuple[Placement, ...]
    max_host_gcc: int  # the newest GNU host compiler this nvcc accepts (its host_config.h)
    approx_download: str  # for messages before the index is read

    @property
    def dirname(self) -> str:
        return f"cuda-{self.cuda}"

    @property
    def index_paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.index_path for p in self.packages))


_TRIPLET_LIBS = "usr/lib/x86_64-linux-gnu/"
_TOOLS = ("ptxas", "fatbinary", "nvlink", "cudafe++", "bin2c", "cuobjdump", "nvdisasm", "cu++filt")

# CUDA 12.4.1 as Debian trixie packages it (non-free, source nvidia-cuda-toolkit 12.4.1-2), with the
# CCCL headers it bundles upstream (thrust, cub, libcu++ 2.3.2: cuda_fp16.h includes <nv/target>), which
# Debian builds from its own source `cccl` in main. libnvvm4 is not needed: cicc links no libnvvm;
# libcudart12 is: FindCUDAToolkit requires libcudart.so to exist even for the static runtime.
CUDA_12_4 = ToolkitSpec(
    cuda="12.4",
    suite="trixie",
    toolkit_source="nvidia-cuda-toolkit",
    machine="x86_64",
    packages=(
        SpecPackage("nvidia-cuda-toolkit", "non-free", "amd64"),
        SpecPackage("nvidia-cuda-dev", "non-free", "amd64"),
        SpecPackage("libcudart12", "non-free", "amd64"),
        SpecPackage("libcu++-dev", "main", "all"),
        SpecPackage("libcub-dev", "main", "all"),
        SpecPackage("libthrust-dev", "main", "all"),
    ),
    placements=(
        Placement("nvidia-cuda-toolkit", "usr/lib/nvidia-cuda-toolkit/bin/nvcc", "bin/"),
        Placement("nvidia-cuda-toolkit", "usr/lib/nvidia-cuda-toolkit/bin/crt/", "bin/crt/"),
        Placement("nvidia-cuda-toolkit", "usr/lib/nvidia-cuda-toolkit/bin/cicc", "nvvm/bin/"),
        Placement("nvidia-cuda-toolkit", "usr/lib/nvidia-cuda-toolkit/libdevice/", "nvvm/libdevice/"),
        *(Placement("nvidia-cuda-toolkit", f"usr/bin/{tool}", "bin/") for tool in _TOOLS),
        Placement("nvidia-cuda-dev", "usr/include/", "include/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "libcudart_static.a", "lib64/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "libcudadevrt.a", "lib64/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "libculibos.a", "lib64/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "libcudart.so", "lib64/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "stubs/libcuda.so", "lib64/stubs/"),
        Placement("libcudart12", _TRIPLET_LIBS + "libcudart.so.12*", "lib64/"),
        Placement("libcu++-dev", "usr/include/", "include/"),
        Placement("libcub-dev", "usr/include/", "include/"),
        Placement("libthrust-dev", "usr/include/", "include/"),
    ),
    max_host_gcc=13,
    approx_download="~1 GB",
)

TOOLKITS: dict[str, ToolkitSpec] = {spec.cuda: spec for spec in (CUDA_12_4,)}

# nvcc reads nvcc.profile beside its binary; $(_HERE_) is that folder, so the tree can be moved.
NVCC_PROFILE = """\
# written by aiacc-build: a CUDA toolkit provisioned from Debian packages, in the standard layout
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64/stubs" "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
"""

CHECK_KERNEL = """\
#include <cuda_runtime.h>
__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
int main() {
  float* x = nullptr;
  if (cudaMalloc(&x, 4 * sizeof(float)) != cudaSuccess) return 1;
  scale<<<1, 4>>>(x, 2.0f, 4);
  return cudaFree(x) == cudaSuccess ? 0 : 1;
}
"""


def toolkits_dir() -> Path:
    """Where provisioned toolkits live: $AIACC_TOOLKITS_DIR, else <build cache>/toolkits."""
    override = os.environ.get("AIACC_TOOLKITS_DIR")
    return Path(override) if override else DEFAULT_CACHE_DIR / "toolkits"


def toolkit_spec(cuda: str) -> ToolkitSpec:
    spec = TOOLKITS.get(cuda)
    if spec is None:
        raise UnknownToolkitError(
            f"no provisioning recipe for CUDA {cuda}; known: {', '.join(sorted(TOOLKITS))} "
            f"(other toolkits come from a builder image or /usr/local/cuda-X.Y)"
        )
    return spec


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
        digest, done = hashlib.sha256(), 0
        try:
            with self.session.get(url, stream=True, timeout=HTTP_TIMEOUT_S) as resp:
                if resp.status_code != 200:
                    raise ArchiveError(f"{url} answered HTTP {resp.status_code}")
                with part.open("wb") as fh:
                    for chunk in resp.iter_content(CHUNK):
                        fh.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress(label, done, entry.size)
        except requests.RequestException as exc:
            part.unlink(missing_ok=True)
            raise ArchiveError(f"download of {url} failed: {exc}") from exc
        if done != entry.size or digest.hexdigest() != entry.sha256:
            part.unlink(missing_ok=True)
            raise ArchiveError(
                f"{url}: got {done} bytes with sha256 {digest.hexdigest()[:16]}..., the index says "
                f"{entry.size} bytes, {entry.sha256[:16]}...: a corrupted or tampered download; retry or pass --mirror"
            )
        part.replace(dest)
        return True


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


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
    if hashlib.sha256(data).hexdigest() != entry.sha256 or len(data) != entry.size:
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
                        digest = hashlib.sha256()
                        with target.open("wb") as out:
                            for chunk in iter(lambda: fh.read(CHUNK), b""):
                                out.write(chunk)
                                digest.update(chunk)
                        target.chmod(0o755 if member.mode & 0o111 else 0o644)
                        placed.files[dest] = digest.hexdigest()
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


def nvcc_release(nvcc: Path) -> tuple[str, str] | None:
    """(major.minor, full version) that `nvcc --version` reports, or None when it does not run."""
    try:
        text = subprocess.run([str(nvcc), "--version"], check=True, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)", text)
    return (match[1], match[2]) if match else None


def host_compiler(max_gcc: int) -> Path:
    """The C++ compiler nvcc drives ($CXX, else c++), checked against the newest GNU version it accepts."""
    name = os.environ.get("CXX", "c++")
    cxx = shutil.which(name)
    if cxx is None:
        raise ToolkitHostError(f"no C++ compiler {name} on PATH (apt-get install g++)")
    problem = host_compiler_problem(Path(cxx).resolve(), max_gcc)
    if problem:
        raise ToolkitHostError(problem)
    return Path(cxx).resolve()


def host_compiler_problem(cxx: Path, max_gcc: int) -> str | None:
    """Why nvcc would refuse `cxx` as its host compiler (a GNU compiler newer than it supports), or None."""
    try:
        version = subprocess.run([str(cxx), "-dumpfullversion", "-dumpversion"], capture_output=True, text=True)
        ident = subprocess.run([str(cxx), "--version"], capture_output=True, text=True).stdout
    except OSError as exc:
        return f"cannot run {cxx}: {exc}"
    if "clang" in ident.lower() or version.returncode != 0:
        return None  # nvcc judges other compilers itself
    major = int(version.stdout.strip().split(".")[0])
    if major > max_gcc:
        return f"{cxx} is GCC {major}; this nvcc accepts GCC up to {max_gcc}: set CXX=g++-{max_gcc}"
    return None


def check_toolkit(prefix: Path, cuda: str, cxx: Path) -> str:
    """Run the assembled toolkit: nvcc --version must say `cuda`, and one kernel must compile for sm_75
    and link against the static runtime. Returns nvcc's full version."""
    release = nvcc_release(prefix / "bin" / "nvcc")
    if release is None or release[0] != cuda:
        raise ToolkitBuildError(f"{prefix}/bin/nvcc --version does not report release {cuda} (got {release})")
    with tempfile.TemporaryDirectory(prefix="aiacc-nvcc-check-") as tmp:
        source = Path(tmp) / "check.cu"
        source.write_text(CHECK_KERNEL)
        cmd = [str(prefix / "bin" / "nvcc"), "-ccbin", str(cxx), "-arch=sm_75", "-cudart", "static",
               str(source), "-o", str(Path(tmp) / "check")]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolkitBuildError(f"the provisioned nvcc cannot compile and link a kernel: {proc.stderr[-800:]}")
    return release[1]


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
