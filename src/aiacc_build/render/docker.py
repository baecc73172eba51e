"""Dockerfiles (the cell passed as build arguments), builder images and one bake file per release.

Published images build on NVIDIA's CUDA images (CPU cells: the plain distribution image) and get
their Python, framework and Perseus wheels from the cell's own conda environment file, so an image
holds exactly what `conda env create -f <file>` makes, whatever the OS type. Images made on this
machine build on the locally made Debian base (naming.local_base_image) with its system Python,
for the cells this machine builds (support.build_location) and that Python only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .. import naming
from ..base_images import BaseImageStatus, check, shipped_table
from ..model import Arch, Cell, ReleaseInfo, group_cells
from . import pip
from .output import RenderedFile
from .support import BuildHost, build_location
from .templates import render
from .variants import arch_variants

# The seed's container advice (FAQ: NCCL "unhandled system error" in containers).
DOCKER_RUN_ARGS = "--shm-size=1g --ulimit memlock=-1"
# micromamba (a static binary from its official image) creates the conda environment in the image.
MICROMAMBA_IMAGE = "mambaorg/micromamba:2.3.3"
# The system Python of each local Debian base: local images exist for that Python only.
LOCAL_SYSTEM_PYTHON = {"debian12": "3.11", "debian13": "3.13"}
# Build arguments of local images that only exist at build time (`aiacc-build images build` sets
# them: loopback URLs of the wheelhouse and the mirror, and the digests of the wheels it built).
LOCAL_BUILD_TIME_ARGS = ("PIP_FIND_LINKS", "PERSEUS_MIRROR", "PERSEUS_WHEEL_SHA256")

_PLATFORMS = {Arch.X86_64: "linux/amd64", Arch.AARCH64: "linux/arm64"}
PUBLISHED_DOCKERFILE = "Dockerfile"
BAKE_FILE = "docker-bake.json"  # at the release folder's root, where `docker buildx bake` looks
LOCAL_DOCKERFILE = "Dockerfile.local"


@dataclass(frozen=True)
class DockerImage:
    cell: Cell  # the first of `variants`: the cells of this tag, one per platform
    variants: tuple[Cell, ...]
    os_type: str
    python: str
    local: bool  # built on this machine from the local Debian base
    target: str
    tags: tuple[str, ...]
    dockerfile: str
    args: dict[str, str]


@dataclass(frozen=True)
class BuilderImage:
    release: ReleaseInfo
    cuda: str | None
    arch: Arch
    target: str
    tag: str
    dockerfile: str
    args: dict[str, str]


def docker_run_args(cell: Cell) -> str:
    """`docker run` options of a cell's image: a GPU only for a CUDA image (a CPU host has no GPU runtime)."""
    return ("--gpus all " if cell.cuda is not None else "") + DOCKER_RUN_ARGS


def _image_args(cell: Cell, os_type: str, python: str, local: bool) -> dict[str, str]:
    args = {
        "BASE_IMAGE": naming.docker_base_image(cell, os_type),
        "PYTHON_VERSION": python,
        "FRAMEWORK": cell.framework.value,
        "FRAMEWORK_VERSION": cell.framework_version,
        "CUDA_VERSION": naming.cuda_or_cpu(cell.cuda),
        "DOCKER_RUN_ARGS": docker_run_args(cell),
    }
    if not local:
        return args | {"CONDA_ENV_FILE": f"{cell.release.conda_dir}/{naming.conda_filename(cell, python)}"}
    pip_args = pip.framework_install_args(cell.build)
    if any(" " in a for a in pip_args):
        raise ValueError(f"cell {cell.key}: pip arguments must not contain spaces: {pip_args}")
    wheels = (naming.common_wheel_path(cell.release), naming.wheel_path(cell))
    return args | {
        "FRAMEWORK_PIP_ARGS": " ".join(pip_args),
        # Mirror paths, URL-encoded (`+` -> `%2B`): the Dockerfile joins them to PERSEUS_MIRROR.
        "PERSEUS_WHEELS": " ".join(naming.url_path(w) for w in wheels),
    }


def unpublished_base(cell: Cell, os_type: str) -> str | None:
    """Why no image of this cell exists for `os_type` (upstream never published its base), or None."""
    return shipped_table().absent_reason(naming.docker_base_image(cell, os_type))


def docker_images(cells: tuple[Cell, ...] | list[Cell], host: BuildHost) -> list[DockerImage]:
    images: list[DockerImage] = []
    for variants in arch_variants(cells):
        cell = variants[0]
        for os_type in cell.release.docker_os_types:
            if unpublished_base(cell, os_type) is not None:
                continue
            for python in cell.env_pythons:
                ref = naming.docker_image_ref(cell, os_type, python, registry=cell.release.docker_registry)
                images.append(_image(variants, os_type, python, local=False, tags=(ref,)))
        os_type = cell.release.local_os_type
        python = LOCAL_SYSTEM_PYTHON.get(os_type)
        local_cells = tuple(c for c in variants if build_location(c, host).here)
        if python in cell.env_pythons and local_cells:
            images.append(_image(local_cells, os_type, python, local=True, tags=(naming.docker_image_ref(cell, os_type, python),)))
    return images


def _image(variants: tuple[Cell, ...], os_type: str, python: str, local: bool, tags: tuple[str, ...]) -> DockerImage:
    cell = variants[0]
    return DockerImage(
        cell=cell,
        variants=variants,
        os_type=os_type,
        python=python,
        local=local,
        target=naming.docker_bake_target(cell, os_type, python),
        tags=tags,
        dockerfile=LOCAL_DOCKERFILE if local else PUBLISHED_DOCKERFILE,
        args=_image_args(cell, os_type, python, local),
    )


def builder_images(release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell]) -> list[BuilderImage]:
    """One builder per (CUDA, arch) that a CI job needs, in first-seen order."""
    seen: dict[tuple[str | None, Arch], BuilderImage] = {}
    for group in group_cells(cells):
        key = (group.cuda, group.arch)
        if key in seen:
            continue
        args = {"MANYLINUX_IMAGE": naming.manylinux_base_image(release, group.arch.value)}
        if group.cuda is not None:
            args |= {"CUDA_IMAGE": naming.builder_cuda_image(release, group.cuda), "CUDA_VERSION": group.cuda}
        seen[key] = BuilderImage(
            release=release,
            cuda=group.cuda,
            arch=group.arch,
            target=naming.builder_bake_target(release, group.cuda, group.arch.value),
            tag=naming.builder_image_tag(release, group.cuda, group.arch.value),
            dockerfile="builder.Dockerfile" if group.cuda is not None else "builder-cpu.Dockerfile",
            args=args,
        )
    return list(seen.values())


def base_references(args: dict[str, str]) -> list[str]:
    """The images a bake target's FROM lines resolve to: every *_IMAGE argument."""
    return [value for name, value in args.items() if name.endswith("_IMAGE")]


def checked_bases(images: list[DockerImage], builders: list[BuilderImage]) -> dict[str, BaseImageStatus]:
    """Every base image the rendered Dockerfiles can resolve to, checked against matrix/facts/docker/base_images.yaml."""
    table = shipped_table()
    references = [MICROMAMBA_IMAGE] + [r for i in images for r in base_references(i.args)]
    references += [r for b in builders for r in base_references(b.args)]
    return {r: check(table, r) for r in dict.fromkeys(references)}


def base_image_labels(cells: tuple[Cell, ...] | list[Cell], host: BuildHost) -> dict[str, dict[str, str]]:
    """Cell key -> {base image: its upstream status} for the support list, unpublished bases included."""
    statuses = checked_bases(docker_images(cells, host), builder_images(cells[0].release, cells))
    labels: dict[str, dict[str, str]] = {}
    for cell in cells:
        entry = labels.setdefault(cell.key, {})
        for os_type in cell.release.docker_os_types:
            ref = naming.docker_base_image(cell, os_type)
            why = unpublished_base(cell, os_type)
            entry[ref] = f"not published upstream, no image: {why}" if why else statuses[ref].label
    return labels


def _status_labels(args: dict[str, str], statuses: dict[str, BaseImageStatus]) -> dict[str, str]:
    return {
        f"ai.perseus.{name.lower().replace('_', '-')}": f"{ref}: {statuses[ref].label}"
        for name, ref in args.items()
        if name.endswith("_IMAGE") and ref in statuses
    }


def bake_document(images: list[DockerImage], builders: list[BuilderImage], statuses: dict[str, BaseImageStatus]) -> dict:
    targets: dict[str, dict] = {}
    for image in images:
        target: dict[str, object] = {
            # Run from the release folder (bake's default file name there): conda/ and docker/ are in context.
            "context": ".",
            "dockerfile": f"docker/{image.dockerfile}",
            "args": image.args,
            "tags": list(image.tags),
            "platforms": [_PLATFORMS[c.arch] for c in image.variants],
            "labels": _status_labels(image.args, statuses),
        }
        if image.local:
            # The loopback servers of `aiacc-build images build` must be reachable from the build.
            target["network"] = "host"
        if image.target in targets:
            raise ValueError(f"two images share the bake target {image.target}")
        targets[image.target] = target
    for builder in builders:
        targets[builder.target] = {
            "context": ".",
            "dockerfile": f"docker/{builder.dockerfile}",
            "args": builder.args,
            "tags": [builder.tag],
            "platforms": [_PLATFORMS[builder.arch]],
            "labels": _status_labels(builder.args, statuses),
        }
    groups = {
        "default": {"targets": [i.target for i in images if not i.local]},
        "local": {"targets": [i.target for i in images if i.local]},
        "builders": {"targets": [b.target for b in builders]},
    }
    return {"group": {name: group for name, group in groups.items() if group["targets"]}, "target": targets}


def render_docker(release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell], host: BuildHost) -> list[RenderedFile]:
    images = docker_images(cells, host)
    builders = builder_images(release, cells)
    statuses = checked_bases(images, builders)
    files = [
        RenderedFile(
            path=f"docker/{name}",
            content=render(
                "docker/Dockerfile.j2",
                release=release,
                local=local,
                run_args=DOCKER_RUN_ARGS,
                micromamba_image=MICROMAMBA_IMAGE,
            ),
            kind="docker",
        )
        for name, local in ((PUBLISHED_DOCKERFILE, False), (LOCAL_DOCKERFILE, True))
        if not local or any(i.local for i in images)
    ]
    for cuda, name in ((True, "builder.Dockerfile"), (False, "builder-cpu.Dockerfile")):
        if any((b.cuda is not None) == cuda for b in builders):
            files.append(
                RenderedFile(path=f"docker/{name}", content=render("docker/builder.Dockerfile.j2", release=release, cuda=cuda), kind="docker")
            )
    files.append(
        RenderedFile(
            path="docker/README.md",
            content=render("docker/README.md.j2", release=release, images=images, builders=builders, run_args=DOCKER_RUN_ARGS),
            kind="docker",
        )
    )
    bake = json.dumps(bake_document(images, builders, statuses), indent=2, sort_keys=False) + "\n"
    files.append(RenderedFile(path=BAKE_FILE, content=bake, kind="docker"))
    return files
