"""Conda environment files: one per (cell, environment Python), named by naming.conda_filename.

Conda supplies Python, pip and the CUDA runtime; the framework comes from conda where its adapter
finds a channel with that exact build (PyTorch 1.5.1 to 2.5 on `pytorch`, 1.8.2 LTS on `pytorch-lts`,
for the Pythons those builds exist for: the table matrix/facts/conda/packages.yaml says), else from pip with the
cell's exact requirement; the Perseus wheels always come from the mirror through pip.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from dataclasses import dataclass

from packaging.version import Version

from .. import naming
from ..adapters import adapter_for
from ..model import Cell
from . import pip
from .output import RenderedFile
from .templates import render

# For a framework from pip: CUDA toolkits before 11.8 come as conda's `cudatoolkit` metapackage;
# from 11.8 on NVIDIA's split packages pinned by `cuda-version` replace it.
MODERN_CUDA = Version("11.8")


@dataclass(frozen=True)
class CondaEnv:
    filename: str
    name: str
    channels: tuple[str, ...]
    dependencies: tuple[str, ...]  # conda match specs
    pip: tuple[str, ...]  # lines of the pip section


def _modern(cuda: str) -> bool:
    return Version(cuda) >= MODERN_CUDA


def conda_env(variants: tuple[Cell, ...], python: str, paths: Mapping[str, str] | None = None) -> CondaEnv:
    """The environment of one cell, or of its architecture variants (see variants.arch_variants). `paths`:
    cell key -> the wheel path a build recorded (its proven platform tag; `index` passes the record's)."""
    cell = variants[0]
    paths = paths or {}

    def wheel_url(c: Cell) -> str:
        path = paths.get(c.key)
        return f"{c.release.mirror_url.rstrip('/')}/{naming.url_path(path)}" if path else naming.wheel_url(c)

    channels: list[str] = []
    deps: list[str] = [f"python={python}", "pip"]
    pip_lines: list[str] = []
    adapter = adapter_for(cell.framework)
    from_conda = adapter.conda_framework(cell, python)
    if from_conda is not None:
        channels += from_conda.channels
        deps += from_conda.dependencies
    else:
        if cell.cuda is not None:
            if _modern(cell.cuda):
                # conda-forge's constraint package; the pip framework brings its CUDA wheels. No
                # `nvidia` channel: nothing here comes from it, and listed first it would shadow
                # conda-forge's cuda-version under strict channel priority.
                deps.append(f"cuda-version={cell.cuda}")
            else:
                # pip builds of TensorFlow / MXNet of that era load the system CUDA and cuDNN; torch
                # wheels bundle their cuDNN, the binding still needs the toolkit's libcudart.
                deps.append(f"cudatoolkit={cell.cuda}")
                if not adapter.pip_build_bundles_cudnn:
                    deps.append("cudnn")
        for variant in variants:
            for line in _pip_option_lines(variant):
                if line not in pip_lines:
                    pip_lines.append(line)
        if len({v.build.requirement for v in variants}) == 1:
            pip_lines.append(cell.build.requirement)
        else:
            pip_lines += [f'{v.build.requirement} ; platform_machine == "{v.arch.value}"' for v in variants]
        # what the adapter installs next to the framework (mxnet: numpy<1.24), as pip installs it elsewhere
        pip_lines += [r for r in adapter_companions(cell) if r not in pip_lines]
    if from_conda is not None:
        deps += [r for r in adapter_companions(cell) if r not in deps]
    # No `nodefaults`: conda >= 26.7 reads it as a channel name and refuses the file before solving
    # (UnavailableInvalidChannel); the file's header says how to keep Anaconda's defaults out instead.
    channels += ["conda-forge"]
    pip_lines.append(naming.common_wheel_url(cell.release))
    if len(variants) == 1:
        pip_lines.append(wheel_url(cell))
    else:
        # One file for several architectures: pip picks the wheel of the machine it runs on.
        for variant in variants:
            dist = naming.wheel_distribution(variant.framework)
            pip_lines.append(f'{dist} @ {wheel_url(variant)} ; platform_machine == "{variant.arch.value}"')
    return CondaEnv(
        filename=naming.conda_filename(cell, python),
        name=naming.conda_env_name(cell, python),
        channels=tuple(channels),
        dependencies=tuple(deps),
        pip=tuple(pip_lines),
    )


def adapter_companions(cell: Cell) -> tuple[str, ...]:
    """The pins the cell's adapter declares next to its framework (adapters' companion_requirements)."""
    from ..adapters import companion_requirements

    return companion_requirements(re.split(r"[=<>!~;\[ ]", cell.build.requirement, maxsplit=1)[0])


def _pip_option_lines(cell: Cell) -> list[str]:
    args = pip.index_args(cell.build)
    return [f"{args[i]} {args[i + 1]}" for i in range(0, len(args), 2)]


def render_conda(variants: tuple[Cell, ...], python: str, paths: Mapping[str, str] | None = None) -> RenderedFile:
    cell = variants[0]
    env = conda_env(variants, python, paths)
    content = render(
        "conda/environment.yaml.j2", env=env, cell=cell, python=python, arches=[v.arch.value for v in variants]
    )
    return RenderedFile(path=f"{cell.release.conda_dir}/{env.filename}", content=content, kind="conda")
