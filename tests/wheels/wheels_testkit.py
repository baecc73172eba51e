"""Cells and a release for the build and index tests, shaped like the 2.0.0 matrix's local cell."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import base64
import hashlib
import zipfile
from pathlib import Path

from aiacc_build.model import Arch, Cell, Framework, FrameworkBuild, ReleaseInfo, WheelTagRules

LOCAL_TORCH_FILE = "/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
SELFTEST = ["-m", "perseus.torch._selftest"]


def check_torch_op(python: Path, release: str) -> str:
    """The wheel's self-test (import perseus.torch, one compression op) in the environment of `python`."""
    out = subprocess.run([str(python), *SELFTEST, release, "2.13.0"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, cwd="/")
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout

RELEASE = ReleaseInfo(
    version="2.0.0",
    cibuildwheel="3.3.0",
    manylinux_image="manylinux_2_28",
    docker_os_types=("ubuntu2204",),
    local_os_type="debian12",
    mirror_url="https://mirror.invalid/aiacc",
    docker_registry="registry.invalid/perseus",
    docker_image="perseus-training",
    docker_tag_suffix="latest",
    conda_dir="conda/latest",
    wheel_tags=WheelTagRules(
        independent_python_tag="py3",
        platform={f: "linux_{arch}" for f in Framework},
        repair_platform={f: "manylinux_2_28_{arch}" for f in Framework},
    ),
)


def torch_cell(
    version: str = "2.13.0",
    cuda: str | None = None,
    python: str = "3.11",
    *,
    requirement: str | None = None,
    variant: str | None = "cpu",
    release: ReleaseInfo = RELEASE,
    cxx11_abi: bool = True,
) -> Cell:
    if requirement is None:
        requirement = f"torch=={version}+{variant}" if variant else f"torch=={version}"
    return Cell(
        release=release,
        release_version=release.version,
        framework=Framework("torch"),
        framework_version=version,
        cuda=cuda,
        python=python,
        arch=Arch.X86_64,
        env_pythons=(python,),
        build=FrameworkBuild(
            requirement=requirement,
            index_url=None,
            cuda_variant=variant,
            cxx11_abi=cxx11_abi,
        ),
    )


LOCAL_CELL = torch_cell()


def with_release(cell: Cell, version: str) -> Cell:
    """The same cell in another release (the bench builds one framework build for several releases)."""
    release = dataclasses.replace(cell.release, version=version)
    return dataclasses.replace(cell, release=release, release_version=version)


def torch_wheel(
    path: Path, cuda: str | None, abi_flag: str | None = None, files: dict[str, bytes] | None = None
) -> Path:
    """A small wheel file holding what torch's wheels say about their build, in their own formats:
    torch/version.py (`cuda: Optional[str] = '13.0'`, 2.x style) and TorchConfig.cmake, whose
    `-D_GLIBCXX_USE_CXX11_ABI=<abi_flag>` line old (pre-cxx11) builds carry and new ones do not.
    With `files` (e.g. headers), those files too and a RECORD listing every file as wheels do."""
    cuda_line = f"cuda: Optional[str] = {cuda!r}" if cuda else "cuda: Optional[str] = None"
    members = {"torch/version.py": f"from typing import Optional\n__version__ = '0'\n{cuda_line}\n".encode()}
    config = "set(TORCH_FOUND TRUE)\n"
    if abi_flag is not None:
        config += f'  set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI={abi_flag}")\n'
    members["torch/share/cmake/Torch/TorchConfig.cmake"] = config.encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if files is not None:
            for name, data in files.items():
                zf.writestr(name, data)
            lines = []
            for name, data in {**members, **files}.items():
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                lines.append(f"{name},sha256={digest},{len(data)}")
            lines.append("torch-0.dist-info/RECORD,,")
            zf.writestr("torch-0.dist-info/RECORD", "\n".join(lines) + "\n")
    return path
