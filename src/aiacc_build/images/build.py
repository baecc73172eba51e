"""Build, push and pull images through the docker SDK, with per-step progress."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import docker

from .. import hints
from ..errors import BuildError


class ImageBuildError(BuildError):
    """An image build, push or pull failed."""


@dataclass(frozen=True)
class BuildResult:
    tag: str
    image_id: str
    seconds: float
    steps: int
    cached_steps: int
    size_bytes: int

    @property
    def cache_hit(self) -> bool:
        """Every step came from the build cache (an unchanged cell)."""
        return self.steps > 0 and self.cached_steps == self.steps


def build_image(
    client: docker.DockerClient,
    context: Path,
    dockerfile: str,
    tag: str,
    buildargs: dict[str, str] | None = None,
    on_line: Callable[[str], None] | None = None,
    network_mode: str | None = None,
) -> BuildResult:
    """Build `context/dockerfile` as `tag` (classic builder: the Debian engine ships no buildx)."""
    start = time.monotonic()
    steps = cached = 0
    seen_from = False
    image_id = None
    log_tail: list[str] = []
    for chunk in client.api.build(
        path=str(context), dockerfile=dockerfile, tag=tag, buildargs=buildargs or {}, rm=True, decode=True, pull=False,
        network_mode=network_mode,
    ):
        if "error" in chunk:
            raise ImageBuildError(f"building {tag} failed: {chunk['error'].strip()}\n" + "".join(log_tail[-30:]))
        line = chunk.get("stream", "")
        if not line:
            aux = chunk.get("aux") or {}
            image_id = aux.get("ID", image_id)
            continue
        log_tail.append(line)
        instruction = _step_instruction(line)
        if instruction is not None:
            # FROM and the global ARGs before it make no layer: the classic builder never says
            # "Using cache" for them, so only the steps after the first FROM are counted.
            if instruction == "FROM":
                seen_from = True
            elif seen_from:
                steps += 1
        elif "Using cache" in line:
            cached += 1
        if on_line is not None and line.strip():
            on_line(line.rstrip())
    seconds = time.monotonic() - start
    built = client.images.get(image_id or tag)
    return BuildResult(tag=tag, image_id=built.id, seconds=seconds, steps=steps, cached_steps=cached, size_bytes=built.attrs["Size"])


def _step_instruction(line: str) -> str | None:
    """`Step 3/22 : ARG PYTHON_VERSION` -> "ARG"; None for any other line of the build output."""
    match = re.match(r"Step \d+/\d+ : (\w+)", line)
    return match.group(1).upper() if match else None


def push_image(client: docker.DockerClient, local_tag: str, registry: str) -> str:
    """Tag `local_tag` under `registry` and push it; returns the pushed reference."""
    repository, tag = local_tag.rsplit(":", 1)
    remote_repo = f"{registry}/{repository}"
    client.images.get(local_tag).tag(remote_repo, tag)
    try:
        for chunk in client.images.push(remote_repo, tag=tag, stream=True, decode=True):
            if "error" in chunk:
                raise ImageBuildError(f"pushing {remote_repo}:{tag} failed: {chunk['error']}{_registry_fix(registry)}")
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"pushing {remote_repo}:{tag} failed: {exc.explanation or exc}{_registry_fix(registry)}") from None
    return f"{remote_repo}:{tag}"


def pull_image(client: docker.DockerClient, reference: str) -> str:
    """Pull `reference` (registry/repository:tag); returns the image id."""
    if ":" not in reference.rsplit("/", 1)[-1]:
        raise ImageBuildError(f"{reference!r} names no tag: pass REGISTRY/perseus-training:TAG, e.g. 127.0.0.1:5000/perseus-training:debian12-cpu-pt2.13.0-py311-latest")
    repository, tag = reference.rsplit(":", 1)
    registry = repository.split("/", 1)[0]
    try:
        return client.images.pull(repository, tag=tag).id
    except docker.errors.APIError as exc:
        raise ImageBuildError(
            f"pulling {reference} failed: {exc.explanation or exc}. Is it pushed (`images build --push {registry}` of its release pushes it)?"
            + _registry_fix(registry)
        ) from None


def _registry_fix(registry: str) -> str:
    port = registry.rsplit(":", 1)[-1]
    return f" Is a registry serving {registry} ({hints.images_registry(int(port) if port.isdigit() else 5000)})?"
