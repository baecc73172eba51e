"""The `docker run` line `images build` prints for a built image: one that works as printed on this machine.

The seed's container advice is `--shm-size=1g --ulimit memlock=-1` (docs and image labels keep it). An engine
without CAP_SYS_RESOURCE cannot raise a container's locked-memory limit above its own hard limit (runc:
"error setting rlimit type 8"), so the printed line is probed on the built image first: `memlock=-1` when the
engine takes it, else the engine's own hard limit, else no `--ulimit` at all, and the line says which."""

from __future__ import annotations

import os
import shlex

import docker

from ..model import Cell
from ..render.docker import docker_run_args
from .engine import DEFAULT_SOCKET, memlock_hard_limit

SEED_MEMLOCK = "--ulimit memlock=-1"
CHECK = "import perseus"


def _runs(client: docker.DockerClient, tag: str, limit: int | None) -> bool:
    ulimits = [] if limit is None else [docker.types.Ulimit(name="memlock", soft=limit, hard=limit)]
    try:
        client.containers.run(tag, ["true"], remove=True, network_mode="none", ulimits=ulimits)
        return True
    except (docker.errors.APIError, docker.errors.ContainerError):
        return False


def memlock_option(client: docker.DockerClient, tag: str, dockerd_pid: int | None) -> tuple[str, str | None]:
    """(the `--ulimit` option that works here, why it is not the seed's); probed on `tag`."""
    if _runs(client, tag, -1):
        return SEED_MEMLOCK, None
    hard = memlock_hard_limit(dockerd_pid)
    if hard is not None and _runs(client, tag, hard):
        return (f"--ulimit memlock={hard}:{hard}",
                f"this engine may not raise locked memory (no CAP_SYS_RESOURCE): `{SEED_MEMLOCK}` is refused here, "
                f"its hard limit {hard} bytes is the most it allows")
    return "", f"`{SEED_MEMLOCK}` is refused by this engine: the line leaves the limit as the engine sets it"


def run_line(cell: Cell, tag: str, memlock: str, socket: str = DEFAULT_SOCKET) -> str:
    """`DOCKER_HOST=... docker run --rm <the cell's options, memlock as probed> <tag> python -c 'import perseus'`."""
    args = docker_run_args(cell)
    if SEED_MEMLOCK not in args:
        raise ValueError(f"the cell's docker run options {args!r} do not hold {SEED_MEMLOCK!r}")
    args = " ".join(args.replace(SEED_MEMLOCK, memlock).split())
    host = os.environ.get("DOCKER_HOST") or f"unix://{socket}"
    return f"DOCKER_HOST={host} docker run --rm {args} {tag} python -c {shlex.quote(CHECK)}"
