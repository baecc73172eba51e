"""Reading the package registry (PyPI's JSON API), recording its answers, replaying them offline.

Two kinds of request are made, both real PyPI endpoints:
- `GET https://pypi.org/pypi/<name>/json`: every release's files (wheel names give Pythons and
  platforms). The per-version endpoint `/pypi/<name>/<version>/json` would be smaller, but this
  network's PyPI proxy answers it with 404, so the project endpoint is used.
- a wheel's core metadata (Requires-Dist, where the CUDA wheels a build needs are pinned): the
  PEP 658 file `<wheel url>.metadata` when the registry has it, else the METADATA member read out of
  the wheel itself with HTTP range requests (zip central directory + one member, a few hundred KB
  of a GB-sized wheel), which is what pip's lazy-wheel reader does.

Recordings (`--record`) are trimmed to what sync uses: the project JSON keeps only the releases
asked for and, per file, `filename`, `url`, `requires_python`, `yanked`; a METADATA file keeps its
header fields (the long description body is dropped). Replay reads the same files back.
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Protocol
from urllib.parse import urljoin

import requests

from ..errors import RegistryError

PYPI_JSON = "https://pypi.org/pypi/{name}/json"
_FILE_KEYS = ("filename", "url", "requires_python", "yanked")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class WheelFile:
    filename: str
    url: str  # absolute


class Registry(Protocol):
    def release_files(self, name: str, version: str) -> list[WheelFile]: ...

    def wheel_metadata(self, wheel: WheelFile) -> str: ...


class _HttpRangeFile:
    """A read-only, seekable file over HTTP range requests, enough for `zipfile.ZipFile`."""

    def __init__(self, url: str, session: requests.Session, size: int) -> None:
        self.url, self.session, self.size, self.pos = url, session, size, 0

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        resp = self.session.get(self.url, headers={"Range": f"bytes={self.pos}-{end - 1}"}, timeout=120)
        if resp.status_code != 206:
            raise RegistryError(f"range request to {self.url} answered HTTP {resp.status_code}, expected 206")
        self.pos = end
        return resp.content


def metadata_headers(text: str) -> str:
    """The header block of a METADATA file (everything before the first blank line)."""
    head, _, _ = text.partition("\n\n")
    return head.rstrip("\n") + "\n"


class LiveRegistry:
    """Talks to PyPI. With `record_dir`, every answer used is also written there (trimmed)."""

    def __init__(self, record_dir: Path | None = None, session: requests.Session | None = None) -> None:
        self.session = session or requests.Session()
        self.record_dir = record_dir
        self._projects: dict[str, tuple[str, dict]] = {}
        self._wanted: dict[str, set[str]] = {}

    def _get(self, url: str, **kw) -> requests.Response:
        try:
            resp = self.session.get(url, timeout=120, **kw)
        except requests.RequestException as exc:
            raise RegistryError(f"cannot reach {url}: {exc}; check the network or run sync offline with --from") from exc
        return resp

    def _project(self, name: str) -> tuple[str, dict]:
        key = normalize(name)
        if key not in self._projects:
            url = PYPI_JSON.format(name=key)
            resp = self._get(url)
            if resp.status_code != 200:
                raise RegistryError(f"{url} answered HTTP {resp.status_code}")
            try:
                self._projects[key] = (resp.url, resp.json())
            except ValueError as exc:
                raise RegistryError(f"{url} did not answer JSON: {exc}") from exc
        return self._projects[key]

    def release_files(self, name: str, version: str) -> list[WheelFile]:
        base, data = self._project(name)
        releases = data.get("releases")
        if not isinstance(releases, dict):
            raise RegistryError(f"{PYPI_JSON.format(name=normalize(name))} has no 'releases' mapping")
        if version not in releases:
            raise RegistryError(f"{name} {version} is not on PyPI (known: {', '.join(list(releases)[-8:])}, ...)")
        self._wanted.setdefault(normalize(name), set()).add(version)
        self._record_project(normalize(name))
        return [WheelFile(f["filename"], urljoin(base, f["url"])) for f in releases[version] if not f.get("yanked")]

    def wheel_metadata(self, wheel: WheelFile) -> str:
        resp = self._get(wheel.url + ".metadata")
        if resp.status_code == 200:
            text = resp.text
        else:
            text = self._metadata_from_wheel(wheel)
        if self.record_dir is not None:
            out = self.record_dir / "metadata" / f"{wheel.filename}.METADATA"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(metadata_headers(text), encoding="utf-8")
        return text

    def _metadata_from_wheel(self, wheel: WheelFile) -> str:
        head = self.session.head(wheel.url, allow_redirects=True, timeout=120)
        size = int(head.headers.get("content-length", "0"))
        if head.status_code != 200 or size == 0:
            raise RegistryError(f"cannot read {wheel.url}: HTTP {head.status_code}")
        with zipfile.ZipFile(_HttpRangeFile(head.url, self.session, size)) as zf:  # type: ignore[arg-type]
            names = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(names) != 1:
                raise RegistryError(f"{wheel.filename} has {len(names)} .dist-info/METADATA files")
            return zf.read(names[0]).decode("utf-8")

    def _record_project(self, key: str) -> None:
        if self.record_dir is None:
            return
        base, data = self._projects[key]
        trimmed = {
            "url": PYPI_JSON.format(name=key),
            "base_url": base,
            "note": "PyPI project JSON, trimmed by aiacc-build to the releases sync reads and the file keys it uses",
            "releases": {
                v: [{k: f.get(k) for k in _FILE_KEYS} for f in data["releases"][v]] for v in sorted(self._wanted[key])
            },
        }
        out = self.record_dir / "pypi" / f"{key}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(trimmed, indent=1, sort_keys=True) + "\n", encoding="utf-8")


class RecordedRegistry:
    """Replays a recording folder written by `LiveRegistry(record_dir=...)`: no network."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        if not (self.folder / "pypi").is_dir():
            raise RegistryError(f"{self.folder} is not a registry recording (no pypi/ folder); record one with --record")

    def release_files(self, name: str, version: str) -> list[WheelFile]:
        path = self.folder / "pypi" / f"{normalize(name)}.json"
        if not path.is_file():
            raise RegistryError(f"the recording {self.folder} has no {path.name}; re-record with `matrix sync --record`")
        data = json.loads(path.read_text(encoding="utf-8"))
        if version not in data["releases"]:
            raise RegistryError(f"the recording {path} has no release {version}; re-record with `matrix sync --record`")
        return [WheelFile(f["filename"], urljoin(data["base_url"], f["url"])) for f in data["releases"][version] if not f.get("yanked")]

    def wheel_metadata(self, wheel: WheelFile) -> str:
        path = self.folder / "metadata" / f"{wheel.filename}.METADATA"
        if not path.is_file():
            raise RegistryError(f"the recording {self.folder} has no metadata of {wheel.filename}; re-record")
        return path.read_text(encoding="utf-8")


def parse_metadata(text: str) -> tuple[list[str], str | None]:
    """(Requires-Dist lines, Requires-Python) of a METADATA text."""
    msg = HeaderParser().parsestr(text)
    return list(msg.get_all("Requires-Dist") or []), msg.get("Requires-Python")
