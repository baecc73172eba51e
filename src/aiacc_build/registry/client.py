"""The one client of the package registry (PyPI, or any PEP 503 / PEP 691 index), all its requests:

- a project's file list from a simple index (PEP 691 JSON, PEP 503 HTML as a fallback), for the build
  plan: kept on disk for REGISTRY_TTL_S so planning the whole matrix again costs nothing; offline,
  only kept answers are used; failures are answers ("unreachable: ..."), never exceptions, so a cell
  whose registry cannot be read is deferred with that reason;
- `GET https://pypi.org/pypi/<name>/json`, every release's files, for `matrix sync` (the per-version
  endpoint would be smaller, but this network's PyPI proxy answers it with 404);
- a wheel's core metadata: the PEP 658 file `<wheel url>.metadata` when the registry has it, else the
  METADATA member read out of the wheel by HTTP range requests (ranges.py).

With `record_dir`, every JSON-API answer used is also written there, trimmed (`matrix sync --record`):
the project JSON keeps only the releases asked for and, per file, `filename`, `url`,
`requires_python`, `yanked`; a METADATA file keeps its header fields.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import requests
from packaging.utils import canonicalize_name

from ..errors import RegistryError
from ..hashing import inputs_key
from .ranges import open_remote_zip

DEFAULT_REGISTRY = "https://pypi.org/simple"
PYPI_JSON = "https://pypi.org/pypi/{name}/json"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
REGISTRY_TIMEOUT_S = 20.0
REGISTRY_TTL_S = float(os.environ.get("AIACC_REGISTRY_TTL_S", 24 * 3600))
_FILE_KEYS = ("filename", "url", "requires_python", "yanked")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def metadata_headers(text: str) -> str:
    """The header block of a METADATA file (everything before the first blank line)."""
    head, _, _ = text.partition("\n\n")
    return head.rstrip("\n") + "\n"


@dataclass(frozen=True)
class WheelFile:
    filename: str
    url: str  # absolute


@dataclass(frozen=True)
class RegistryFile:
    filename: str
    url: str
    size: int | None
    sha256: str | None


class _AnchorParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href and not dict(attrs).get("data-yanked"):
                self.hrefs.append(href)


def page_links(html: str) -> list[str]:
    """The hrefs of a PEP 503 page, yanked files left out."""
    parser = _AnchorParser()
    parser.feed(html)
    return parser.hrefs


class RegistryClient:
    """The registry's one client (see the module's docstring). `cache_dir`: where simple-index answers
    are kept (None: not kept); `record_dir`: where JSON-API answers are recorded (None: not recorded)."""

    def __init__(
        self,
        cache_dir: Path | None = None,
        offline: bool = False,
        record_dir: Path | None = None,
        session: requests.Session | None = None,
    ) -> None:
        self.cache_dir = cache_dir
        self.offline = offline
        self.record_dir = record_dir
        self.session = session or requests.Session()
        self._failed_hosts: dict[str, str] = {}
        self._projects: dict[str, tuple[str, dict]] = {}
        self._wanted: dict[str, set[str]] = {}

    # --- simple index (the build plan) ---------------------------------------------------------

    def files(self, project: str, index_url: str | None) -> list[RegistryFile] | str:
        base = (index_url or DEFAULT_REGISTRY).rstrip("/")
        url = f"{base}/{canonicalize_name(project)}/"
        cached = self._cached(url)
        if cached is not None:
            return cached
        if self.offline:
            return f"offline, and {url} was never read"
        host = urlparse(url).netloc
        if host in self._failed_hosts:
            return self._failed_hosts[host]
        try:
            response = self.session.get(
                url, headers={"Accept": f"{SIMPLE_JSON}, text/html;q=0.1"}, timeout=REGISTRY_TIMEOUT_S
            )
        except requests.RequestException as exc:
            self._failed_hosts[host] = f"index {base} unreachable ({type(exc).__name__})"
            return self._failed_hosts[host]
        if response.status_code == 404:
            return f"{project} is not in index {base}"
        if not response.ok:
            return f"index {base} answered HTTP {response.status_code}"
        files = self._parse(url, response)
        self._store(url, files)
        return files

    @staticmethod
    def _parse(url: str, response: requests.Response) -> list[RegistryFile]:
        if response.headers.get("content-type", "").startswith(SIMPLE_JSON):
            return [
                RegistryFile(
                    filename=f["filename"],
                    url=urljoin(url, f["url"]),
                    size=f.get("size"),
                    sha256=f.get("hashes", {}).get("sha256"),
                )
                for f in response.json().get("files", [])
                if not f.get("yanked") and f["filename"].endswith(".whl")
            ]
        out = []
        for href in page_links(response.text):
            absolute, fragment = urldefrag(urljoin(url, href))
            filename = Path(urlparse(absolute).path).name
            if filename.endswith(".whl"):
                sha = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else None
                out.append(RegistryFile(filename=filename, url=absolute, size=None, sha256=sha))
        return out

    def _cache_file(self, url: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / f"{inputs_key('registry', {'url': url})}.json"

    def _cached(self, url: str) -> list[RegistryFile] | None:
        path = self._cache_file(url)
        if path is None or not path.is_file():
            return None
        data = json.loads(path.read_text())
        if not self.offline and time.time() - data["fetched"] > REGISTRY_TTL_S:
            return None
        return [RegistryFile(**f) for f in data["files"]]

    def _store(self, url: str, files: list[RegistryFile]) -> None:
        path = self._cache_file(url)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"url": url, "fetched": time.time(), "files": [f.__dict__ for f in files]}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)

    # --- PyPI's JSON API and wheel metadata (matrix sync) -----------------------------------------

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
        with open_remote_zip(wheel.url, self.session) as zf:
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
