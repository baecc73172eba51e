"""The locally made base image: debootstrap of Debian, then `docker import`.

The published images base on CUDA images of centos7/ubuntu1804/...; none can be pulled here, so
images built on this machine use a declared Debian OS type (the release's `local_os_type`) and the
tag says so: a tag never names an OS the image does not contain.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import docker

from ..errors import HostServiceError
from .stream import run_streaming


class BaseImageError(HostServiceError):
    """The Debian base image could not be made (debootstrap or docker import)."""


@dataclass(frozen=True)
class DebianBase:
    os_type: str  # the declared OS type in tags, e.g. "debian12"
    suite: str  # debootstrap suite, e.g. "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    packages: tuple[str, ...] = ("ca-certificates",)


DEBIAN_BASES = {"debian12": DebianBase("debian12", "bookworm"), "debian13": DebianBase("debian13", "trixie")}


def debian_base(os_type: str) -> DebianBase:
    try:
        return DEBIAN_BASES[os_type]
    except KeyError:
        raise BaseImageError(
            f"not supported here: OS type {os_type!r} cannot be made on this machine "
            f"(no archive reachable); local OS types: {', '.join(sorted(DEBIAN_BASES))}. "
            "centos/ubuntu images are built only in CI."
        ) from None


@dataclass(frozen=True)
class BaseImage:
    image: str
    image_id: str
    made_seconds: float | None  # debootstrap + import time when made now, None when it existed


def ensure_base_image(client: docker.DockerClient, base: DebianBase, image: str, work_dir: Path,
                      on_line: Callable[[str], None] | None = None) -> BaseImage:
    """`image` (naming.local_base_image), made with debootstrap when it does not exist yet; `on_line` gets
    debootstrap's output as it comes (`I: Retrieving ...`, `I: Extracting ...`), then the import's steps."""
    try:
        return BaseImage(image=image, image_id=client.images.get(image).id, made_seconds=None)
    except docker.errors.ImageNotFound:
        pass
    start = time.monotonic()
    if shutil.which("debootstrap") is None:
        raise BaseImageError("not supported here: no debootstrap. Fix: apt-get install debootstrap, then retry.")
    root = work_dir / f"rootfs-{base.os_type}"
    if root.exists():
        shutil.rmtree(root)
    work_dir.mkdir(parents=True, exist_ok=True)
    cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(base.packages)}", base.suite, str(root), base.mirror]
    if on_line is not None:
        on_line(f"making base image {image}: debootstrap {base.suite} from {base.mirror}")
    result = run_streaming(cmd, on_line)
    if result.returncode != 0:
        raise BaseImageError(f"debootstrap {base.suite} failed (exit {result.returncode}):\n{result.tail[-2000:]}")
    if on_line is not None:
        on_line(f"making base image {image}: docker import of {root}")
    try:
        tarball = subprocess.run(["tar", "-C", str(root), "-c", "."], capture_output=True, check=True).stdout
        repository, tag = image.split(":")
        client.api.import_image_from_data(tarball, repository=repository, tag=tag)
        return BaseImage(image=image, image_id=client.images.get(image).id, made_seconds=time.monotonic() - start)
    finally:
        shutil.rmtree(root, ignore_errors=True)
