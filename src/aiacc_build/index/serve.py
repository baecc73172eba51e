"""Serve a mirror root over HTTP on 127.0.0.1 only (a local stand-in for the release's mirror URL)."""

from __future__ import annotations

import functools
import ssl
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"


class _QuietHandler(SimpleHTTPRequestHandler):
    log_sink: Any = None  # callable(str) or None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        if self.log_sink is not None:
            self.log_sink(format % args)


def tls_context(certfile: Path, keyfile: Path | None = None) -> ssl.SSLContext:
    """A server-side TLS context for HTTPS on loopback (e.g. a certificate of a private CA)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)
    return context


class MirrorServer:
    """A threaded static server of `root`; port 0 picks a free port. Use as a context manager.
    With `tls` (a server-side SSLContext holding the certificate) it serves HTTPS."""

    def __init__(self, root: Path, port: int = 0, log_sink: Any = None, tls: ssl.SSLContext | None = None):
        if not root.is_dir():
            raise FileNotFoundError(f"mirror root {root} does not exist")
        handler = type("MirrorHandler", (_QuietHandler,), {"log_sink": staticmethod(log_sink) if log_sink else None})
        self.httpd = ThreadingHTTPServer((LOOPBACK, port), functools.partial(handler, directory=str(root)))
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.root = root
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"{self.scheme}://{host}:{port}"

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def start(self) -> MirrorServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="aiacc-mirror", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> MirrorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
