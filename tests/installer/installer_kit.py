"""What the installer's end-to-end tests share: the rendered script, fresh environments, their
snapshots (pip freeze + the sha256 of every file), mirror copies, and re-versioned wheels."""

from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import io
import json
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from aiacc_build import naming
from aiacc_build.wheels.cache import BuildCache
from aiacc_build.wheels.envs import Venv, create_venv, install
from aiacc_build.wheels.toolchain import find_interpreter
from aiacc_build.model import Cell, ReleaseInfo
from aiacc_build.render.install_script import render_install_script
from aiacc_installer.exits import CODE



def write_script(folder: Path, release: ReleaseInfo, cells: list[Cell] | tuple[Cell, ...]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / naming.INSTALL_SCRIPT_NAME
    path.write_text(render_install_script(release, cells).content)
    return path


def run_script(script: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """bash install_AIACC-Training.sh ARGS, without this session's AIACC_/PIP_/VIRTUAL_ENV settings
    (the CA bundle variables stay: they are the machine's)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIACC_", "PIP_", "PYTHON", "VIRTUAL_ENV", "UV_"))}
    clean.update(PIP_CONFIG_FILE=os.devnull)
    clean.update(env or {})
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env=clean, timeout=timeout, check=False)


def python_venv(folder: Path, cache_dir: Path, *requirements: str) -> Venv:
    """A fresh Python 3.11 venv with pip and the given requirements (files or names), made by uv."""
    interpreter = find_interpreter("3.11")
    assert interpreter is not None, "no Python 3.11 under pyenv"
    cache = BuildCache(cache_dir)
    env = create_venv(folder, interpreter, cache)
    install(env, [*requirements, "pip"], cache)
    return env


@dataclass(frozen=True)
class Snapshot:
    freeze: tuple[str, ...]
    files: dict[str, str]  # path relative to the venv -> sha256 (symlinks: "-> target")

    def differences(self, other: Snapshot) -> list[str]:
        out = [f"freeze: {line}" for line in sorted(set(self.freeze) ^ set(other.freeze))]
        for path in sorted(set(self.files) | set(other.files)):
            if self.files.get(path) != other.files.get(path):
                out.append(f"{path}: {self.files.get(path, 'absent')} -> {other.files.get(path, 'absent')}")
        return out


def snapshot(env: Venv, under: str = "") -> Snapshot:
    freeze = subprocess.run(
        [str(env.python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PIP_CONFIG_FILE": os.devnull},
    ).stdout
    root = env.path / under if under else env.path
    files: dict[str, str] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            key = str(path.relative_to(env.path))
            if path.is_symlink():
                files[key] = "-> " + os.readlink(path)
            else:
                with path.open("rb") as handle:
                    files[key] = hashlib.file_digest(handle, "sha256").hexdigest()
    return Snapshot(tuple(sorted(freeze.splitlines())), files)


def copy_mirror(root: Path, target: Path) -> Path:
    shutil.copytree(root, target)
    return target


# --- a release re-versioned from the local build (a "newer" release for upgrade tests) -------------

def reversioned_release(release: ReleaseInfo, cells: tuple[Cell, ...], version: str) -> tuple[ReleaseInfo, list[Cell]]:
    info = dataclasses.replace(release, version=version)
    return info, [dataclasses.replace(c, release=info, release_version=version) for c in cells]


def rewrite_wheel(source: Path, target: Path, old: str, new: str, edit: dict[str, bytes] | None = None) -> None:
    """Copy a wheel, renaming its version `old` -> `new` (dist-info folder, METADATA, the perseus-common
    pin) and replacing the files in `edit`; RECORD is rewritten with the new hashes."""
    entries: dict[str, bytes] = {}
    with zipfile.ZipFile(source) as archive:
        for name in archive.namelist():
            data = archive.read(name)
            if name.endswith(".dist-info/METADATA"):
                data = data.replace(f"Version: {old}".encode(), f"Version: {new}".encode())
                data = data.replace(f"perseus-common=={old}".encode(), f"perseus-common=={new}".encode())
            if name.endswith(".dist-info/RECORD"):
                continue
            top, _, rest = name.partition("/")
            if top.endswith(".dist-info"):
                name = top.replace(f"-{old}", f"-{new}", 1) + "/" + rest
            entries[name] = data
    for name, data in (edit or {}).items():
        assert name in entries, f"{name} is not in {source.name}"
        entries[name] = data
    (dist_info,) = {n.split("/")[0] for n in entries if n.split("/")[0].endswith(".dist-info")}
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([name, f"sha256={digest}", len(data)])
    writer.writerow([f"{dist_info}/RECORD", "", ""])
    entries[f"{dist_info}/RECORD"] = record.getvalue().encode()
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)


def republish(mirror: Path, manifest_edits: dict[str, Path]) -> None:
    """Point manifest.json's records of the given paths at new files (sha256, size); refresh SHA256SUMS."""
    manifest_path = mirror / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for record in [manifest["common"], *manifest["cells"]]:
        if record["path"] in manifest_edits:
            data = manifest_edits[record["path"]].read_bytes()
            record.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    manifest_path.write_text(json.dumps(manifest, indent=2))
    lines = []
    for path in sorted(p for p in mirror.rglob("*") if p.is_file() and p.name != naming.CHECKSUMS_FILENAME):
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(mirror)}")
    (mirror / naming.CHECKSUMS_FILENAME).write_text("\n".join(lines) + "\n")


def private_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A private CA and a certificate for 127.0.0.1 it signs, made by openssl: (ca.pem, cert.pem, key.pem)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, csr, cert = (folder / n for n in ("ca.key", "ca.pem", "key.pem", "server.csr", "cert.pem"))
    ext = folder / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                   "extendedKeyUsage=serverAuth\n")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
            "-subj", "/CN=AIACC test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-out", str(cert),
            "-days", "2", "-extfile", str(ext))
    return ca, cert, key
