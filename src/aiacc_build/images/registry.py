"""A Docker registry on 127.0.0.1 (Debian's docker-registry), the default registry of local builds."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from ..errors import HostServiceError


class RegistryServerError(HostServiceError):
    """The local registry could not be started or reached."""


CONFIG_TEMPLATE = """\
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{port}
"""


@dataclass
class LocalRegistry:
    port: int
    process: subprocess.Popen

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_registry(state_dir: Path, port: int | None = None, wait_s: float = 20) -> LocalRegistry:
    binary = shutil.which("docker-registry")
    if binary is None:
        raise RegistryServerError("not supported here: no docker-registry. Fix: apt-get install docker-registry.")
    port = port or free_port()
    state_dir.mkdir(parents=True, exist_ok=True)
    config = state_dir / f"registry-{port}.yml"
    config.write_text(CONFIG_TEMPLATE.format(root=state_dir / "storage", port=port))
    with open(state_dir / f"registry-{port}.log", "ab") as log:
        process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RegistryServerError(f"docker-registry exited with {process.returncode}; see {state_dir}/registry-{port}.log")
        try:
            if requests.get(f"http://127.0.0.1:{port}/v2/", timeout=1).status_code == 200:
                return LocalRegistry(port=port, process=process)
        except requests.RequestException:
            pass
        time.sleep(0.2)
    process.kill()
    raise RegistryServerError(f"docker-registry did not answer on 127.0.0.1:{port} within {wait_s:.0f}s")
