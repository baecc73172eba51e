"""The one HTTP range reader: a remote zip (a GB-sized wheel) read by range requests, the central
directory and the members asked for only, as pip's lazy-wheel reader does."""

from __future__ import annotations

import zipfile

import requests

from ..errors import RegistryError

# Each request fetches at least this much: zipfile's small reads (end record, local headers) then
# come out of one window instead of one request each.
WINDOW = 256 * 1024


class HttpRangeFile:
    """A read-only, seekable file over HTTP range requests, enough for `zipfile.ZipFile`."""

    def __init__(self, url: str, session: requests.Session, size: int, timeout: float = 120) -> None:
        self.url, self.session, self.size, self.timeout, self.pos = url, session, size, timeout, 0
        self._start, self._data = 0, b""
        self.requests = 0

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def read(self, n: int | None = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        if not (self._start <= self.pos and end <= self._start + len(self._data)):
            self._fetch(self.pos, max(end, min(self.size, self.pos + WINDOW)))
        out = self._data[self.pos - self._start : end - self._start]
        self.pos = end
        return out

    def _fetch(self, start: int, end: int) -> None:
        self.requests += 1
        resp = self.session.get(self.url, headers={"Range": f"bytes={start}-{end - 1}"}, timeout=self.timeout)
        if resp.status_code != 206:
            raise RegistryError(f"range request to {self.url} answered HTTP {resp.status_code}, expected 206")
        self._start, self._data = start, resp.content


def open_remote_zip(url: str, session: requests.Session | None = None, timeout: float = 120) -> zipfile.ZipFile:
    """The zip at `url`, read lazily. RegistryError when the server gives no size or no ranges."""
    session = session or requests.Session()
    try:
        head = session.head(url, allow_redirects=True, timeout=timeout)
    except requests.RequestException as exc:
        raise RegistryError(f"cannot reach {url}: {exc}") from exc
    size = int(head.headers.get("content-length", "0"))
    if head.status_code != 200 or size == 0:
        raise RegistryError(f"cannot read {url}: HTTP {head.status_code}")
    try:
        return zipfile.ZipFile(HttpRangeFile(head.url, session, size, timeout))  # type: ignore[arg-type]
    except requests.RequestException as exc:
        raise RegistryError(f"cannot read {url} by ranges: {exc}") from exc
