"""The job's builder image, made on this machine: the rendered builder Dockerfile of the job's bake
target, on a local stand-in for cibuildwheel's manylinux image (no registry can be pulled from here).

The stand-in is Debian (the base `images build` debootstraps) with the /opt/python/cpXY-cpXY layout,
compilers, the host's CA bundle (HTTPS is intercepted here) and the host's local wheel folders as
pip find-links (cibuildwheel mounts the host at /host). It proves the job's steps, not the manylinux
glibc floor: the wheels it makes need this Debian's glibc, whatever their tag says.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import docker

from ..wheels.toolchain import find_interpreter
from ..images.base import debian_base, ensure_base_image
from ..images.build import BuildResult, build_image
from ..model import ReleaseInfo
from ..naming import local_base_image
from .actions import StepFailed

HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# Debian bookworm's own CPython: the builder's interpreters are venvs of it (cibuildwheel needs
# /opt/python/<id>/bin/{python,pip} and nothing else of the manylinux layout).
STANDIN_PYTHONS = {"cp311-cp311": "python3.11"}
# CPythons Debian bookworm lacks, copied from this machine's pyenv (built here, on this glibc) without
# their site-packages: cibuildwheel runs before_all's environment with cp39 (the MXNet cell builds on
# it), the TensorFlow cells build on cp310.
PYENV_PYTHONS = {"cp39-cp39": "3.9", "cp310-cp310": "3.10"}
PYENV_RUNTIME_LIBS = "libssl3 libffi8 libsqlite3-0 libbz2-1.0 liblzma5 libreadline8 libncursesw6 zlib1g libuuid1"
GLIBC_NOTE = (
    "the builder is a Debian stand-in for the manylinux image: it proves the workflow's steps, not the "
    "manylinux glibc floor (its wheels need this Debian's glibc 2.36, whatever platform tag they carry)"
)


@dataclass(frozen=True)
class BuilderBuild:
    standin: str
    target: str
    tag: str
    result: BuildResult


def standin_tag(release: ReleaseInfo) -> str:
    return f"perseus-manylinux-standin:{release.local_os_type}"


def _find_links() -> list[str]:
    """The host's local wheel folders (PIP_FIND_LINKS), as the container sees them under /host."""
    folders = [p for p in os.environ.get("PIP_FIND_LINKS", "").split() if p.startswith("/") and Path(p).is_dir()]
    return [f"/host{p}" for p in folders]


def standin_dockerfile(base: str) -> str:
    pythons = " && ".join(f"{exe} -m venv /opt/python/{ident}" for ident, exe in STANDIN_PYTHONS.items())
    packages = "g++ make cmake ninja-build patchelf git xz-utils patch file unzip " + " ".join(
        f"{exe} {exe}-venv {exe}-dev" for exe in sorted(set(STANDIN_PYTHONS.values()))
    )
    env = {
        "PIP_CERT": str(HOST_CA_BUNDLE),
        "SSL_CERT_FILE": str(HOST_CA_BUNDLE),
        "REQUESTS_CA_BUNDLE": str(HOST_CA_BUNDLE),
        "PIP_DEFAULT_TIMEOUT": "180",
        "PIP_RETRIES": "0",  # the vendor indexes the jobs name have no route from here: fail them at once
    }
    links = _find_links()
    if links:
        env["PIP_FIND_LINKS"] = " ".join(links)
    env_line = " \\\n    ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    return (
        f"# Local stand-in for cibuildwheel's manylinux image, made by `aiacc-build ci run-local`: {GLIBC_NOTE}.\n"
        f"FROM {base}\n"
        "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
        f"{packages} >/dev/null && rm -rf /var/lib/apt/lists/*\n"
        "COPY host-ca-bundle.crt /etc/ssl/certs/ca-certificates.crt\n"
        f"ENV {env_line}\n"
        f"RUN {pythons} && ls -d /opt/python/cp3*-cp3*\n"
        + _pyenv_layers()
        + 'LABEL perseus.role="local manylinux stand-in (Debian)"\n'
    )


def _pyenv_installs() -> dict[str, Path]:
    """cpXY-cpXY -> the pyenv prefix of that minor version on this machine."""
    found = {}
    for ident, minor in PYENV_PYTHONS.items():
        interpreter = find_interpreter(minor)
        if interpreter is None:
            raise StepFailed(f"the builder stand-in needs CPython {minor} from pyenv (/root/.pyenv/versions/{minor}.*): none here")
        found[ident] = interpreter.executable.parent.parent
    return found


def _pyenv_layers() -> str:
    if not PYENV_PYTHONS:
        return ""
    lines = [f"RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends {PYENV_RUNTIME_LIBS} >/dev/null && rm -rf /var/lib/apt/lists/*\n"]
    for ident, prefix in _pyenv_installs().items():
        lines.append(f"COPY pyenv/{prefix.name}/ {prefix}/\n")
        lines.append(f"RUN {prefix}/bin/python{PYENV_PYTHONS[ident]} -m venv /opt/python/{ident} && /opt/python/{ident}/bin/python -V\n")
    return "".join(lines)


def _copy_pyenv(context: Path) -> None:
    for ident, prefix in _pyenv_installs().items():
        target = context / "pyenv" / prefix.name
        ignore = shutil.ignore_patterns("site-packages", "test", "tests", "__pycache__", "*.a", "idle_test")
        shutil.copytree(prefix, target, symlinks=True, ignore=ignore)
        (target / "lib" / f"python{PYENV_PYTHONS[ident]}" / "site-packages").mkdir(parents=True, exist_ok=True)


def ensure_standin(client: docker.DockerClient, release: ReleaseInfo, cache_dir: Path, on_line: Callable[[str], None]) -> str:
    base = ensure_base_image(client, debian_base(release.local_os_type), local_base_image(release, None), cache_dir / "base")
    tag = standin_tag(release)
    with tempfile.TemporaryDirectory(prefix="aiacc-standin-") as tmp:
        context = Path(tmp)
        (context / "Dockerfile").write_text(standin_dockerfile(base.image))
        shutil.copyfile(HOST_CA_BUNDLE, context / "host-ca-bundle.crt")
        _copy_pyenv(context)
        build_image(client, context, "Dockerfile", tag, on_line=on_line, network_mode="host")
    return tag


def bake_target_of(run: str) -> str:
    """The target a `docker buildx bake ... TARGET` step builds (its last word)."""
    return shlex.split(run.strip().splitlines()[-1])[-1]


def build_builder(
    client: docker.DockerClient,
    release: ReleaseInfo,
    bake_dir: Path,
    target_name: str,
    cache_dir: Path,
    on_line: Callable[[str], None],
) -> BuilderBuild:
    bake_file = bake_dir / "docker-bake.json"
    if not bake_file.is_file():
        raise StepFailed(f"no {bake_file}: the job's render step must run first")
    targets = json.loads(bake_file.read_text())["target"]
    if target_name not in targets:
        raise StepFailed(f"{bake_file} has no target {target_name!r}")
    target = targets[target_name]
    if (target.get("args") or {}).get("CUDA_VERSION"):
        raise StepFailed(f"{target_name} is a CUDA builder: its toolkit image cannot be pulled here (CPU builders only)")
    standin = ensure_standin(client, release, cache_dir, on_line)
    args = {**(target.get("args") or {}), "MANYLINUX_IMAGE": standin}
    tag = target["tags"][0]
    result = build_image(client, bake_dir / target.get("context", "."), target["dockerfile"], tag, args, on_line=on_line, network_mode="host")
    return BuilderBuild(standin=standin, target=target_name, tag=tag, result=result)
