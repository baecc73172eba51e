"""Build the local images of a release: the rendered Dockerfile.local, on the debootstrapped base."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import docker

from .. import naming
from ..errors import AiaccError, UnsupportedCellError
from ..render import pip
from ..render.docker import LOCAL_DOCKERFILE, DockerImage, docker_images
from ..render.support import BuildHost
from .base import BaseImage, debian_base, ensure_base_image
from .build import BuildResult, build_image
from .wheelhouse import LoopbackServer, framework_wheelhouse, sha256_of


class MissingWheelError(AiaccError):
    exit_code = 6


@dataclass(frozen=True)
class LocalBuild:
    image: DockerImage
    base: BaseImage
    result: BuildResult


def local_images(cells, host: BuildHost, keys: tuple[str, ...] = ()) -> list[DockerImage]:
    """The images this machine builds (render.docker decides), optionally only those of some cells."""
    images = [i for i in docker_images(cells, host) if i.local]
    if keys:
        images = [i for i in images if any(c.key in keys for c in i.variants)]
        if not images:
            raise UnsupportedCellError(
                f"no local image for {', '.join(keys)}: local images exist for "
                + ", ".join(i.cell.key for i in docker_images(cells, host) if i.local)
            )
    return images


def _wheels_of(image: DockerImage, mirror_root: Path) -> list[Path]:
    paths = [mirror_root / naming.common_wheel_path(image.cell.release), mirror_root / naming.wheel_path(image.cell)]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise MissingWheelError(
            f"image {image.tags[0]} needs wheels that are not built: {', '.join(missing)}. "
            f"Fix: aiacc-build build --release {image.cell.release_version} (then rerun)."
        )
    return paths


def _context(mirror_root: Path, into: Path) -> Path:
    """A small build context: only what the Dockerfile copies (the rendered docker/ folder)."""
    docker_dir = mirror_root / "docker"
    if not (docker_dir / LOCAL_DOCKERFILE).is_file():
        raise MissingWheelError(f"{docker_dir / LOCAL_DOCKERFILE} is missing. Fix: aiacc-build render --release {mirror_root.name}")
    shutil.copytree(docker_dir, into / "docker")
    return into


def build_local_images(
    client: docker.DockerClient,
    images: list[DockerImage],
    mirror_root: Path,
    cache_dir: Path,
    port: int,
    on_line: Callable[[str], None] | None = None,
) -> list[LocalBuild]:
    built: list[LocalBuild] = []
    with tempfile.TemporaryDirectory(prefix="aiacc-images-") as tmp:
        serve_root = Path(tmp) / "serve"
        serve_root.mkdir()
        (serve_root / "mirror").symlink_to(mirror_root.resolve())
        context = _context(mirror_root, Path(tmp) / "context")
        with LoopbackServer(serve_root, port) as server:
            for image in images:
                wheels = _wheels_of(image, mirror_root)
                wheelhouse = framework_wheelhouse(pip.framework_install_args(image.cell.build), image.python, cache_dir / "wheelhouse")
                link = serve_root / "wheelhouse"
                if link.is_symlink():
                    link.unlink()
                link.symlink_to(wheelhouse)
                base_image = image.args["BASE_IMAGE"]
                if image.cell.cuda is not None:
                    raise UnsupportedCellError(
                        f"not supported here yet: the CUDA base {base_image} (a toolkit inside the debootstrapped "
                        f"base) is not made on this machine; {image.tags[0]} is built in CI"
                    )
                base = ensure_base_image(client, debian_base(image.os_type), base_image, cache_dir / "base")
                args = dict(image.args)
                args["PIP_FIND_LINKS"] = server.url("wheelhouse/")
                args["PERSEUS_MIRROR"] = server.url("mirror")
                args["PERSEUS_WHEEL_SHA256"] = " ".join(sha256_of(w) for w in wheels)
                result = build_image(
                    client, context, f"docker/{image.dockerfile}", image.tags[0], args, on_line=on_line, network_mode="host"
                )
                built.append(LocalBuild(image=image, base=base, result=result))
    return built
