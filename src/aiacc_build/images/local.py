"""Build the local images of a release: the rendered Dockerfile.local, on the debootstrapped base."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import docker

from .. import hints, naming
from ..errors import BuildError, UnsupportedCellError
from ..hashing import file_sha256
from ..render import pip
from ..render.docker import LOCAL_DOCKERFILE, DockerImage, docker_images
from ..render.support import BuildHost
from .base import BaseImage, debian_base, ensure_base_image
from .build import BuildResult, build_image
from .wheelhouse import LoopbackServer, framework_wheelhouse


class MissingWheelError(BuildError):
    """The wheel an image needs has not been built into dist/ yet."""


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
                + ", ".join(i.cell.key.split("/", 1)[1] for i in docker_images(cells, host) if i.local)
                + " (--cell takes the key as `build --plan-only` prints it)"
            )
    return images


def base_made_here(image: DockerImage) -> str | None:
    """None when this machine makes the image's base; else why not (the image is built in CI)."""
    if image.cell.cuda is not None:
        return (
            f"not supported here yet: the CUDA base {image.args['BASE_IMAGE']} (a CUDA toolkit inside the "
            f"debootstrapped base) is not made on this machine; {image.tags[0]} is built in CI"
        )
    return None


def buildable_images(images: list[DockerImage], mirror_root: Path, named: bool) -> tuple[list[DockerImage], dict[str, str]]:
    """Split into the images to build now and the skipped ones (tag -> why, with the fix).

    Images of cells the user named must all be buildable: one that is not fails loudly instead of
    being skipped. Without names, nothing buildable at all is an error too.
    """
    ready: list[DockerImage] = []
    skipped: dict[str, str] = {}
    for image in images:
        why_not = base_made_here(image)
        if why_not is None:
            try:
                _wheels_of(image, mirror_root)
            except MissingWheelError as exc:
                why_not = str(exc)
        if why_not is None:
            ready.append(image)
        elif named:
            raise (UnsupportedCellError if image.cell.cuda is not None else MissingWheelError)(why_not)
        else:
            skipped[image.tags[0]] = why_not
    if not ready:
        raise MissingWheelError("no local image can be built now:\n" + "\n".join(f"- {why}" for why in skipped.values()))
    return ready, skipped


def _cell_wheel_path(image: DockerImage, mirror_root: Path) -> str:
    """The cell's wheel as the build record names it (its proven platform tag), else the release's name."""
    from ..wheels.record import load_record

    record = load_record(mirror_root.name, mirror_root.parent)
    built = [c for c in (record.cells if record else []) if c.key == image.cell.key and c.status == "built"]
    return built[0].path if built else naming.wheel_path(image.cell)


def _wheels_of(image: DockerImage, mirror_root: Path) -> list[Path]:
    paths = [mirror_root / naming.common_wheel_path(image.cell.release), mirror_root / _cell_wheel_path(image, mirror_root)]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise MissingWheelError(
            f"image {image.tags[0]} needs wheels that are not built: {', '.join(missing)}. "
            f"Fix: {hints.build_cells(image.cell.release_version, image.cell.key.split('/', 1)[1], mirror_root.parent)} (then rerun)."
        )
    return paths


def _context(mirror_root: Path, into: Path) -> Path:
    """A small build context: only what the Dockerfile copies (the rendered docker/ folder)."""
    docker_dir = mirror_root / "docker"
    if not (docker_dir / LOCAL_DOCKERFILE).is_file():
        raise MissingWheelError(f"{docker_dir / LOCAL_DOCKERFILE} is missing. Fix: {hints.render(mirror_root.name, mirror_root.parent)}")
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
    # Every input is checked before anything is built: a missing wheel fails before an hour of builds.
    for image in images:
        why_not = base_made_here(image)
        if why_not is not None:
            raise UnsupportedCellError(why_not)
    wheels_of = {image.tags[0]: _wheels_of(image, mirror_root) for image in images}
    built: list[LocalBuild] = []
    with tempfile.TemporaryDirectory(prefix="aiacc-images-") as tmp:
        serve_root = Path(tmp) / "serve"
        serve_root.mkdir()
        (serve_root / "mirror").symlink_to(mirror_root.resolve())
        context = _context(mirror_root, Path(tmp) / "context")
        with LoopbackServer(serve_root, port) as server:
            for image in images:
                if on_line is not None:
                    on_line(f"Collecting the framework wheels of {image.tags[0]} (pip download, cached)")
                wheelhouse = framework_wheelhouse(pip.framework_install_args(image.cell.build), image.python,
                                                  cache_dir / "wheelhouse", on_line)
                link = serve_root / "wheelhouse"
                if link.is_symlink():
                    link.unlink()
                link.symlink_to(wheelhouse)
                base = ensure_base_image(client, debian_base(image.os_type), image.args["BASE_IMAGE"], cache_dir / "base", on_line)
                args = dict(image.args)
                args["PIP_FIND_LINKS"] = server.url("wheelhouse/")
                args["PERSEUS_MIRROR"] = server.url("mirror")
                args["PERSEUS_WHEEL_SHA256"] = " ".join(file_sha256(w) for w in wheels_of[image.tags[0]])
                # the recorded names (a wheel built here carries its proven platform tag)
                args["PERSEUS_WHEELS"] = " ".join(naming.url_path(w.relative_to(mirror_root).as_posix())
                                                  for w in wheels_of[image.tags[0]])
                result = build_image(
                    client, context, f"docker/{image.dockerfile}", image.tags[0], args, on_line=on_line, network_mode="host"
                )
                built.append(LocalBuild(image=image, base=base, result=result))
    return built
