"""What a provisioned toolkit is: its spec per CUDA version (packages, placements), the layout's
nvcc.profile and check kernel, and where toolkits live."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError, HostServiceError, RegistryError
from ..paths import DEFAULT_CACHE_DIR

DEFAULT_MIRROR = "http://deb.debian.org/debian"  # plain HTTP, as apt uses it: the signature and hashes protect it
DEFAULT_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
MANIFEST = "toolkit.json"
MANIFEST_FORMAT = 1
HTTP_TIMEOUT_S = 60
CHUNK = 1 << 20

# progress(label, done_bytes, total_bytes): one call per chunk of a download
Progress = Callable[[str, int, int], None]
# step(message): one call per stage of the work (resolving, extracting, checking)
Step = Callable[[str], None]


class ArchiveError(RegistryError):
    """Debian's archive could not be read, or what it served does not verify (signature, hash, index)."""


class ToolkitHostError(HostServiceError):
    """A host tool the provisioning runs (dpkg-deb, gpgv) is missing or failed."""


class UnknownToolkitError(ConfigurationError):
    """No provisioning recipe for the requested CUDA version."""


class ToolkitBuildError(HostServiceError):
    """The assembled toolkit does not work (nvcc does not run, or cannot compile and link a kernel)."""


@dataclass(frozen=True)
class Placement:
    """Where package members go in the layout. `source` ending in "/" maps that whole folder (recursively)
    into the folder `target`; otherwise `source` is a glob over full member paths and each match goes into
    the folder `target` under its own name."""

    package: str
    source: str
    target: str

    def destination(self, member: str) -> str | None:
        if self.source.endswith("/"):
            if member.startswith(self.source) and member != self.source:
                return self.target + member[len(self.source) :]
            return None
        if fnmatch.fnmatchcase(member, self.source):
            return self.target + member.rsplit("/", 1)[-1]
        return None


@dataclass(frozen=True)
class SpecPackage:
    name: str
    component: str  # "non-free", "main"
    deb_arch: str  # "amd64", or "all" for architecture-independent packages (headers)

    @property
    def index_path(self) -> str:
        """Its Packages index's path in the Release file."""
        return f"{self.component}/binary-{self.deb_arch}/Packages"


@dataclass(frozen=True)
class ToolkitSpec:
    cuda: str  # "12.4"
    suite: str  # Debian suite (codename)
    toolkit_source: str  # the Debian source package whose binaries must all be CUDA `cuda`
    machine: str  # platform.machine() it runs on
    packages: tuple[SpecPackage, ...]  # what the placements read, nothing more
    placements: tuple[Placement, ...]
    max_host_gcc: int  # the newest GNU host compiler this nvcc accepts (its host_config.h)
    approx_download: str  # for messages before the index is read

    @property
    def dirname(self) -> str:
        return f"cuda-{self.cuda}"

    @property
    def index_paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.index_path for p in self.packages))


_TRIPLET_LIBS = "usr/lib/x86_64-linux-gnu/"
_TOOLS = ("ptxas", "fatbinary", "nvlink", "cudafe++", "bin2c", "cuobjdump", "nvdisasm", "cu++filt")


def _debian_placements(cudart: str) -> tuple[Placement, ...]:
    """Where Debian's nvidia-cuda-toolkit packages put a toolkit, mapped into the standard layout; `cudart`
    is the runtime library's package (libcudart12, libcudart11.0)."""
    return (
        Placement("nvidia-cuda-toolkit", "usr/lib/nvidia-cuda-toolkit/bin/nvcc", "bin/"),
        Placement("nvidia-cuda-toolkit", "usr/lib/nvidia-cuda-toolkit/bin/crt/", "bin/crt/"),
        Placement("nvidia-cuda-toolkit", "usr/lib/nvidia-cuda-toolkit/bin/cicc", "nvvm/bin/"),
        Placement("nvidia-cuda-toolkit", "usr/lib/nvidia-cuda-toolkit/libdevice/", "nvvm/libdevice/"),
        *(Placement("nvidia-cuda-toolkit", f"usr/bin/{tool}", "bin/") for tool in _TOOLS),
        Placement("nvidia-cuda-dev", "usr/include/", "include/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "libcudart_static.a", "lib64/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "libcudadevrt.a", "lib64/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "libculibos.a", "lib64/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "libcudart.so", "lib64/"),
        Placement("nvidia-cuda-dev", _TRIPLET_LIBS + "stubs/libcuda.so", "lib64/stubs/"),
        Placement(cudart, _TRIPLET_LIBS + "libcudart.so.*", "lib64/"),
        Placement("libcu++-dev", "usr/include/", "include/"),
        Placement("libcub-dev", "usr/include/", "include/"),
        Placement("libthrust-dev", "usr/include/", "include/"),
    )


def _debian_packages(cudart: str) -> tuple[SpecPackage, ...]:
    return (
        SpecPackage("nvidia-cuda-toolkit", "non-free", "amd64"),
        SpecPackage("nvidia-cuda-dev", "non-free", "amd64"),
        SpecPackage(cudart, "non-free", "amd64"),
        SpecPackage("libcu++-dev", "main", "all"),
        SpecPackage("libcub-dev", "main", "all"),
        SpecPackage("libthrust-dev", "main", "all"),
    )


# CUDA 12.4.1 as Debian trixie packages it (non-free, source nvidia-cuda-toolkit 12.4.1-2), with the
# CCCL headers it bundles upstream (thrust, cub, libcu++ 2.3.2: cuda_fp16.h includes <nv/target>), which
# Debian builds from its own source `cccl` in main. libnvvm4 is not needed: cicc links no libnvvm;
# libcudart12 is: FindCUDAToolkit requires libcudart.so to exist even for the static runtime.
CUDA_12_4 = ToolkitSpec(
    cuda="12.4",
    suite="trixie",
    toolkit_source="nvidia-cuda-toolkit",
    machine="x86_64",
    packages=_debian_packages("libcudart12"),
    placements=_debian_placements("libcudart12"),
    max_host_gcc=13,
    approx_download="~1 GB",
)

# CUDA 11.8.0 as Debian bookworm packages it (non-free, source nvidia-cuda-toolkit 11.8.0-5~deb12u1; its
# runtime package keeps the soname's name, libcudart11.0), thrust/cub 1.17.2 and libcu++ 1.8.1 from
# bookworm main (the CCCL generation CUDA 11.8 bundles upstream). Its nvcc accepts GCC up to 11
# (bookworm's g++-11: CXX=g++-11).
CUDA_11_8 = ToolkitSpec(
    cuda="11.8",
    suite="bookworm",
    toolkit_source="nvidia-cuda-toolkit",
    machine="x86_64",
    packages=_debian_packages("libcudart11.0"),
    placements=_debian_placements("libcudart11.0"),
    max_host_gcc=11,
    approx_download="~0.9 GB",
)

TOOLKITS: dict[str, ToolkitSpec] = {spec.cuda: spec for spec in (CUDA_11_8, CUDA_12_4)}

# nvcc reads nvcc.profile beside its binary; $(_HERE_) is that folder, so the tree can be moved.
NVCC_PROFILE = """\
# written by aiacc-build: a CUDA toolkit provisioned from Debian packages, in the standard layout
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64/stubs" "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
"""

CHECK_KERNEL = """\
#include <cuda_runtime.h>
__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
int main() {
  float* x = nullptr;
  if (cudaMalloc(&x, 4 * sizeof(float)) != cudaSuccess) return 1;
  scale<<<1, 4>>>(x, 2.0f, 4);
  return cudaFree(x) == cudaSuccess ? 0 : 1;
}
"""


def toolkits_dir() -> Path:
    """Where provisioned toolkits live: $AIACC_TOOLKITS_DIR, else <build cache>/toolkits."""
    override = os.environ.get("AIACC_TOOLKITS_DIR")
    return Path(override) if override else DEFAULT_CACHE_DIR / "toolkits"


def toolkit_spec(cuda: str) -> ToolkitSpec:
    spec = TOOLKITS.get(cuda)
    if spec is None:
        raise UnknownToolkitError(
            f"no provisioning recipe for CUDA {cuda}; known: {', '.join(sorted(TOOLKITS))} "
            f"(other toolkits come from a builder image or /usr/local/cuda-X.Y)"
        )
    return spec

