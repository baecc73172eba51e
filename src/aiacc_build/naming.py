"""The one place every published name is computed from a cell.

Templates and build steps call these functions; nothing else pastes names together. The golden
tests in tests/test_naming.py pin the seed's exact names.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from .adapters import adapter_for
from .base_images import resolve_cuda_image, shipped_table
from .model import Cell, CellGroup, Framework, ReleaseInfo, accelerator  # noqa: F401  (accelerator: named here too)

INSTALL_SCRIPT_NAME = "install_AIACC-Training.sh"
COMMON_DISTRIBUTION = "perseus_common"


def python_nodot(python: str) -> str:
    """"3.6" -> "36", "3.11" -> "311"."""
    major, minor = python.split(".")[:2]
    return f"{major}{minor}"


def cpython_tags(python: str) -> tuple[str, str]:
    """(python tag, ABI tag) of a CPython-specific wheel: the `m` ABI flag exists up to 3.7."""
    nodot = python_nodot(python)
    major, minor = (int(p) for p in python.split(".")[:2])
    abi = f"cp{nodot}m" if (major, minor) < (3, 8) else f"cp{nodot}"
    return f"cp{nodot}", abi


def cuda_nodot(cuda: str) -> str:
    return cuda.replace(".", "")


def accelerator_nodot(cuda: str | None) -> str:
    """The accelerator without its dot (mirror folders, CI job ids): `cuda110` or `cpu`."""
    return "cpu" if cuda is None else f"cuda{cuda_nodot(cuda)}"


def cuda_or_cpu(cuda: str | None) -> str:
    """The CUDA version as build inputs and the install script's table spell it: `11.0` or `cpu`."""
    return "cpu" if cuda is None else cuda


def accelerator_folder(cell: Cell) -> str:
    """Mirror folder of a cell's wheel: `cuda110/`, `cpu/`."""
    return accelerator_nodot(cell.cuda)


def accelerator_label(cell: Cell) -> str:
    """Conda file label: `cuda11.0` or `cpu`."""
    return accelerator(cell.cuda)


def docker_accelerator_label(cell: Cell) -> str:
    """Docker tag label: `cu11.0` or `cpu`."""
    return "cpu" if cell.cuda is None else f"cu{cell.cuda}"


def wheel_distribution(framework: Framework) -> str:
    """`perseus_torch`: a name that is the framework's own, so its adapter says it."""
    return adapter_for(framework).binding_distribution


def wheel_version(cell: Cell) -> str:
    """`<release>+<framework public version>`: never a second `+` (no `+2.13.0+cpu`)."""
    if "+" in cell.framework_version:
        raise ValueError(f"framework version {cell.framework_version!r} must be a public version (no '+')")
    return f"{cell.release_version}+{cell.framework_version}"


def _wheel_tags(cell: Cell, platform_rule: dict[Framework, str], platform: str | None = None) -> str:
    if cell.python is not None:
        py, abi = cpython_tags(cell.python)
    else:
        py, abi = cell.release.wheel_tags.independent_python_tag, "none"
    platform = platform or platform_rule[cell.framework].format(arch=cell.arch.value)
    return f"{py}-{abi}-{platform}"


def wheel_filename(cell: Cell, platform: str | None = None) -> str:
    """The published file name, e.g. `perseus_torch-1.5.0+1.7.1-cp36-cp36m-linux_x86_64.whl`.

    `platform`: the tag a build proved instead of the release's (a wheel built outside the release's
    manylinux image carries the glibc its shared objects need, e.g. `manylinux_2_36_x86_64`); the build
    record keeps the name a build gave, and everything after the build reads it from there."""
    return f"{wheel_distribution(cell.framework)}-{wheel_version(cell)}-{_wheel_tags(cell, cell.release.wheel_tags.platform, platform)}.whl"


def repaired_wheel_filename(cell: Cell) -> str:
    """The name `auditwheel repair` gives the wheel before it is re-tagged to the published name."""
    return (
        f"{wheel_distribution(cell.framework)}-{wheel_version(cell)}-"
        f"{_wheel_tags(cell, cell.release.wheel_tags.repair_platform)}.whl"
    )


def wheel_path(cell: Cell, platform: str | None = None) -> str:
    """Folder + file: the key of a wheel everywhere (the same file name exists in cuda101/ and cuda102/)."""
    return f"{accelerator_folder(cell)}/{wheel_filename(cell, platform)}"


def url_path(path: str) -> str:
    """Encode a mirror path for a URL the way the seed does (`+` -> `%2B`)."""
    return quote(path, safe="/")


def wheel_url(cell: Cell, mirror_url: str | None = None) -> str:
    base = (mirror_url or cell.release.mirror_url).rstrip("/")
    return f"{base}/{url_path(wheel_path(cell))}"


def common_wheel_filename(release: ReleaseInfo) -> str:
    """perseus-common: the pure-Python runtime every framework wheel requires, one per release."""
    return f"{COMMON_DISTRIBUTION}-{release.version}-py3-none-any.whl"


MANIFEST_FILENAME = "manifest.json"
CHECKSUMS_FILENAME = "SHA256SUMS"
SIMPLE_INDEX_DIR = "simple"


def simple_project_name(distribution: str) -> str:
    """PEP 503 project name: `perseus_torch` -> `perseus-torch`."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def simple_index_page(folder: str | None, project: str) -> str:
    """Path of a project's PEP 503 page: `cpu/simple/perseus-torch/index.html`; folder None: the root index."""
    return f"{simple_index_dir(folder)}{simple_project_name(project)}/index.html"


def simple_index_dir(folder: str | None) -> str:
    """A folder's index directory from the mirror root, `cpu/simple/`; folder None: the root index `simple/`."""
    return f"{folder}/{SIMPLE_INDEX_DIR}/" if folder else f"{SIMPLE_INDEX_DIR}/"


def simple_index_url(mirror_url: str, folder: str | None) -> str:
    """The `--index-url` of a folder (`<mirror>/cpu/simple/`) or of the root index (folder None)."""
    return f"{mirror_url.rstrip('/')}/{simple_index_dir(folder)}"


def conda_filename(cell: Cell, python: str) -> str:
    """`torch_1.7.1_cuda11.0_py36.yaml`; CPU cells: `torch_2.13.0_cpu_py311.yaml`."""
    _check_env_python(cell, python)
    return f"{cell.framework.value}_{cell.framework_version}_{accelerator_label(cell)}_py{python_nodot(python)}.yaml"


def conda_url(cell: Cell, python: str, mirror_url: str | None = None) -> str:
    base = (mirror_url or cell.release.mirror_url).rstrip("/")
    return f"{base}/{cell.release.conda_dir}/{url_path(conda_filename(cell, python))}"


def docker_tag(cell: Cell, os_type: str, python: str) -> str:
    """`centos7-cu11.0-pt1.7.1-py36-latest` (seed scheme: os-cuda-framework+version-python-suffix)."""
    _check_env_python(cell, python)
    return (
        f"{os_type}-{docker_accelerator_label(cell)}-{adapter_for(cell.framework).tag_abbreviation}{cell.framework_version}"
        f"-py{python_nodot(python)}-{cell.release.docker_tag_suffix}"
    )


def docker_image_ref(cell: Cell, os_type: str, python: str, registry: str | None = None) -> str:
    """`perseus-training:<tag>`, prefixed with a registry when one is given."""
    name = f"{cell.release.docker_image}:{docker_tag(cell, os_type, python)}"
    return f"{registry.rstrip('/')}/{name}" if registry else name


def cibw_identifier(cell: Cell, python: str | None = None) -> str:
    """cibuildwheel build identifier, e.g. `cp36-manylinux_x86_64`.

    A Python-independent wheel is built once, with the first Python of its environments.
    """
    py = cell.python or python or cell.env_pythons[0]
    return f"cp{python_nodot(py)}-manylinux_{cell.arch.value}"


def cibw_build_selector(group: CellGroup) -> str:
    """CIBW_BUILD value that selects exactly the group's cells."""
    return " ".join(sorted({cibw_identifier(c) for c in group.cells}))


def ci_job_id(group: CellGroup) -> str:
    """A GitHub Actions job id (letters, digits, `_`, `-`): `torch-1_7_1-cuda110-x86_64`."""
    accel = accelerator_nodot(group.cuda)
    return f"{group.framework.value}-{group.framework_version.replace('.', '_')}-{accel}-{group.arch.value}"


def builder_image_tag(release: ReleaseInfo, cuda: str | None, arch: str) -> str:
    """Local builder image for a CUDA toolkit: `perseus-builder:manylinux2014-cuda11.0-x86_64`."""
    accel = accelerator(cuda)
    return f"perseus-builder:{release.manylinux_image}-{accel}-{arch}"


def _check_env_python(cell: Cell, python: str) -> None:
    if python not in cell.env_pythons:
        raise ValueError(f"cell {cell.key} has no environment for Python {python} (has {', '.join(cell.env_pythons)})")


# --- Names used by the renderer (conda, Docker, CI, install script) ---------------------------------

_MANYLINUX_RHEL_OS = {"manylinux2014": "centos7", "manylinux_2_28": "rockylinux8", "manylinux_2_34": "rockylinux9"}


def common_wheel_path(release: ReleaseInfo) -> str:
    """perseus-common lives at the mirror's root, beside the install script."""
    return common_wheel_filename(release)


def common_wheel_url(release: ReleaseInfo, mirror_url: str | None = None) -> str:
    base = (mirror_url or release.mirror_url).rstrip("/")
    return f"{base}/{url_path(common_wheel_path(release))}"


def install_script_url(release: ReleaseInfo, mirror_url: str | None = None) -> str:
    base = (mirror_url or release.mirror_url).rstrip("/")
    return f"{base}/{INSTALL_SCRIPT_NAME}"


def _nvidia_os(os_type: str) -> str:
    """Our OS type -> the OS part of an nvidia/cuda tag: `ubuntu1804` -> `ubuntu18.04`."""
    if os_type.startswith("ubuntu") and len(os_type) == len("ubuntu") + 4 and os_type[6:].isdigit():
        return f"ubuntu{os_type[6:8]}.{os_type[8:]}"
    return os_type


def distro_base_image(os_type: str) -> str:
    """The plain distribution image of an OS type (CPU images): `ubuntu2204` -> `ubuntu:22.04`."""
    for distro in ("ubuntu", "centos", "debian", "rockylinux"):
        if os_type.startswith(distro) and os_type[len(distro):].isdigit():
            number = os_type[len(distro):]
            if distro == "ubuntu" and len(number) == 4:
                number = f"{number[:2]}.{number[2:]}"
            return f"{distro}:{number}"
    raise ValueError(f"no distribution image known for OS type {os_type!r}")


def cuda_base_image(cuda: str, os_type: str) -> str:
    """Published images build on NVIDIA's, the real tag from matrix/facts/docker/base_images.yaml:
    `nvidia/cuda:11.0.3-cudnn8-devel-centos7`."""
    return resolve_cuda_image(shipped_table(), cuda, "cudnn-devel", _nvidia_os(os_type))


def local_base_image(release: ReleaseInfo, cuda: str | None) -> str:
    """The Debian base made on this machine (debootstrap + import), with or without a CUDA toolkit."""
    accel = accelerator(cuda)
    return f"perseus-base:{release.local_os_type}-{accel}"


def docker_base_image(cell: Cell, os_type: str) -> str:
    """The BASE_IMAGE build argument of a cell's image for one OS type."""
    if os_type == cell.release.local_os_type:
        return local_base_image(cell.release, cell.cuda)
    return distro_base_image(os_type) if cell.cuda is None else cuda_base_image(cell.cuda, os_type)


def docker_bake_target(cell: Cell, os_type: str, python: str) -> str:
    """Bake target names allow letters, digits, `_` and `-`: the tag with dots turned into `_`."""
    return docker_tag(cell, os_type, python).replace(".", "_")


def manylinux_base_image(release: ReleaseInfo, arch: str) -> str:
    """cibuildwheel's manylinux image of the release's policy: `quay.io/pypa/manylinux2014_x86_64`."""
    return f"quay.io/pypa/{release.manylinux_image}_{arch}"


def builder_cuda_image(release: ReleaseInfo, cuda: str) -> str:
    """NVIDIA's devel image whose toolkit the builder copies: same RHEL generation as the manylinux policy."""
    try:
        os_name = _MANYLINUX_RHEL_OS[release.manylinux_image]
    except KeyError:
        raise ValueError(
            f"no CUDA devel image known for manylinux policy {release.manylinux_image!r} "
            f"(known: {', '.join(sorted(_MANYLINUX_RHEL_OS))})"
        ) from None
    return resolve_cuda_image(shipped_table(), cuda, "devel", os_name)


def builder_bake_target(release: ReleaseInfo, cuda: str | None, arch: str) -> str:
    """`builder-manylinux2014-cuda11_0-x86_64`."""
    tag = builder_image_tag(release, cuda, arch).split(":", 1)[1]
    return f"builder-{tag.replace('.', '_')}"


def ci_workflow_filename(release: ReleaseInfo) -> str:
    """`build-wheels-1.5.0.yml`: one GitHub Actions workflow per release."""
    return f"build-wheels-{release.version}.yml"


def conda_env_name(cell: Cell, python: str) -> str:
    """The environment `conda env create -f` makes: the file name without `.yaml`."""
    return conda_filename(cell, python)[: -len(".yaml")]
