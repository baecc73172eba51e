"""Build inputs of local images, served on loopback: the framework wheelhouse and the release mirror."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from ..errors import BuildError
from ..hashing import bytes_sha256
from .stream import run_streaming

# A fixed port by default: the URLs are build arguments, and the same arguments keep the build cache.
DEFAULT_PORT = 18765


class WheelhouseError(BuildError):
    """The framework wheelhouse for an image build could not be prepared."""


def framework_wheelhouse(pip_args: tuple[str, ...], python_version: str, cache_dir: Path,
                         on_line: Callable[[str], None] | None = None) -> Path:
    """A folder with the exact framework build and its dependencies, downloaded once (cached by arguments).
    `on_line` gets pip's output as it comes (`Collecting ...`, `Progress <bytes> of <bytes>`, `Saved ...`)."""
    key = bytes_sha256(repr((pip_args, python_version)).encode())[:16]
    target = cache_dir / key
    done = target / ".complete"
    if done.exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download", "--progress-bar", "raw", "--dest", str(target),
        "--only-binary=:all:", "--python-version", python_version, *pip_args,
    ]
    result = run_streaming(cmd, on_line)
    if result.returncode != 0:
        raise WheelhouseError(f"could not download {' '.join(pip_args)} for Python {python_version}:\n{result.tail[-2000:]}")
    done.write_text(" ".join(pip_args) + "\n")
    return target


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass


@dataclass
class LoopbackServer:
    """Serves `root` on 127.0.0.1 (root holds `wheelhouse/` and `mirror/` links) until stopped."""

    root: Path
    port: int
    _server: ThreadingHTTPServer | None = None

    def __enter__(self) -> "LoopbackServer":
        try:
            self._server = ThreadingHTTPServer(("127.0.0.1", self.port), partial(_QuietHandler, directory=str(self.root)))
        except OSError as exc:
            raise WheelhouseError(f"cannot serve build inputs on 127.0.0.1:{self.port}: {exc}. Fix: pass --port with a free port.") from None
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"
