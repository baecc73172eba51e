"""Start (or find) a Docker engine and hand out a docker SDK client for it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import docker

from ..errors import HostServiceError


class EngineError(HostServiceError):
    """dockerd could not be started or reached."""


@dataclass
class Engine:
    """A Docker engine this process talks to; `owned` when we started dockerd ourselves."""

    socket: str
    client: docker.DockerClient
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    state_dir: Path | None = None

    @property
    def owned(self) -> bool:
        return self.process is not None

    def release(self) -> None:
        """Close the client and leave dockerd running (it is in its own session): `docker run` can use it;
        `stop_own_engine` (aiacc-build images stop) ends it later."""
        self.client.close()
        self.process = None

    def stop(self) -> None:
        self.client.close()
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None
        if self.state_dir is not None:
            _unmount_under(self.state_dir)


def _unmount_under(root: Path) -> None:
    """Unmount what dockerd left mounted under its own state (it keeps exec/netns/default bound)."""
    prefix = str(root.resolve()) + "/"
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1].replace("\\040", " ") for line in mounts]
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", point], capture_output=True)


def _client_for(socket: str, timeout: float = 600) -> docker.DockerClient | None:
    try:
        client = docker.DockerClient(base_url=f"unix://{socket}", timeout=timeout)
        client.ping()
        return client
    except Exception:  # noqa: BLE001 - any failure means "no engine there"
        return None


DEFAULT_SOCKET = "/tmp/aiacc-build-docker.sock"


def start_engine(state_dir: Path, socket: str = DEFAULT_SOCKET, wait_s: float = 60) -> Engine:
    """Reuse a running engine on `socket`, else start dockerd with its data under `state_dir`."""
    client = _client_for(socket)
    if client is not None:
        return Engine(socket=socket, client=client)
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineError("not supported here: no dockerd on PATH. Fix: apt-get install docker.io (Debian), then retry.")
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "dockerd.log"
    # cgroupfs: this machine has no systemd to delegate cgroups; the legacy builder, because the
    # Debian engine ships no buildx and the SDK's build API is the classic one.
    cmd = [
        dockerd,
        "--host", f"unix://{socket}",
        "--data-root", str(state_dir / "data"),
        "--exec-root", str(state_dir / "exec"),
        "--pidfile", str(state_dir / "dockerd.pid"),
        "--exec-opt", "native.cgroupdriver=cgroupfs",
    ]
    with open(log_path, "ab") as log:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise EngineError(f"dockerd exited with code {process.returncode}; its log ({log_path}) ends:\n{tail}")
        client = _client_for(socket)
        if client is not None:
            return Engine(socket=socket, client=client, process=process, log_path=log_path, state_dir=state_dir)
        time.sleep(0.5)
    process.kill()
    process.wait()
    _unmount_under(state_dir)
    raise EngineError(f"dockerd did not answer on {socket} within {wait_s:.0f}s; see {log_path}")


def own_engine_pid(state_dir: Path, socket: str = DEFAULT_SOCKET) -> int | None:
    """The pid of the dockerd this tool started (its pidfile under `state_dir`), when it still runs."""
    pidfile = state_dir / "dockerd.pid"
    try:
        pid = int(pidfile.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    # the pid must still be our dockerd (same binary, same socket), never a process that reused the number
    if not cmdline or not cmdline[0].endswith(b"dockerd") or f"unix://{socket}".encode() not in cmdline:
        return None
    return pid


def stop_own_engine(state_dir: Path, socket: str = DEFAULT_SOCKET, wait_s: float = 30) -> int | None:
    """Stop the dockerd this tool started and left running; its pid, or None when none runs."""
    pid = own_engine_pid(state_dir, socket)
    if pid is None:
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.2)
    if Path(f"/proc/{pid}").exists():
        os.kill(pid, signal.SIGKILL)
    _unmount_under(state_dir)
    return pid


def memlock_hard_limit(pid: int | None) -> int | None:
    """The hard RLIMIT_MEMLOCK (bytes) of a process (dockerd: what its containers may raise to); None: unlimited."""
    import resource

    try:
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if pid else ():
            if line.startswith("Max locked memory"):
                hard = line.split()[4]
                return None if hard == "unlimited" else int(hard)
    except OSError:
        pass
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def engine_from_env(environ: Mapping[str, str] = os.environ) -> Engine | None:
    """The engine DOCKER_HOST names, when it is set: used as it is, never started by this tool."""
    host = environ.get("DOCKER_HOST", "")
    if not host:
        return None
    try:
        client = docker.DockerClient(base_url=host, timeout=600)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - every failure means the same thing to the user
        raise EngineError(
            f"DOCKER_HOST={host} does not answer ({type(exc).__name__}): start that engine, or unset DOCKER_HOST "
            f"to let this tool start its own dockerd on {DEFAULT_SOCKET}"
        ) from None
    return Engine(socket=host, client=client)


def open_engine(state_dir: Path) -> Engine:
    """DOCKER_HOST's engine when it is set, else the tool's own (reused, or started on DEFAULT_SOCKET)."""
    return engine_from_env() or start_engine(state_dir)
