"""Real CUDA toolkits provisioned from Debian's archive into this tool's cache, never into /usr.

`aiacc-build toolkit fetch 12.4` reads the suite's InRelease (its signature checked with gpgv against
Debian's archive keyring), the component's Packages index (fetched by its SHA256 from InRelease), then
downloads the few .deb files a compile needs (each checked against the index's SHA256 and size) and
streams only the members the layout uses out of `dpkg-deb --fsys-tarfile` into a standard CUDA layout:

    <toolkits dir>/cuda-12.4/
      bin/nvcc, bin/nvcc.profile, bin/{ptxas,fatbinary,nvlink,cudafe++,cuobjdump,...}, bin/crt/*.stub
      nvvm/bin/cicc, nvvm/libdevice/libdevice.10.bc
      include/    the CUDA headers (cuda_runtime.h, cublas_v2.h, thrust, cub, ...)
      lib64/      libcudart_static.a, libcudadevrt.a, libculibos.a, libcudart.so*, stubs/libcuda.so
      toolkit.json  what was fetched (packages, hashes, signature) and the sha256 of every file placed

Debian splits a toolkit: nvcc and cicc under /usr/lib/nvidia-cuda-toolkit, the other tools in /usr/bin,
headers in /usr/include, libraries in /usr/lib/<triplet>; the placements of each spec map those paths.
Only what a compile needs is written (nvidia-cuda-dev alone unpacks to 2.5 GB of static math libraries).
The nvcc.profile is relative to its own folder ($(_HERE_)), so the tree is assembled in a temporary
folder, checked (nvcc --version, one kernel compiled and linked against the static runtime) and renamed
into place whole: a toolkit folder is either complete or absent.
"""


from __future__ import annotations

from .archive import (
    Archive,
    DebPackage,
    IndexEntry,
    ReleaseIndex,
    parse_packages,
    parse_release,
    resolve_packages,
    unsigned_payload,
    verify_signature,
)
from .extract import Placed, extract_placements
from .fetch import FetchResult, fetch_toolkit
from .installed import (
    InstalledToolkit,
    installed,
    installed_toolkits,
    integrity_problems,
)
from .probes import host_compiler_problem, nvcc_release
from .spec import (
    CHECK_KERNEL,
    CHUNK,
    CUDA_11_8,
    CUDA_12_4,
    DEFAULT_KEYRING,
    DEFAULT_MIRROR,
    TOOLKITS,
    ArchiveError,
    Placement,
    SpecPackage,
    ToolkitBuildError,
    ToolkitHostError,
    ToolkitSpec,
    UnknownToolkitError,
    toolkit_spec,
    toolkits_dir,
)

__all__ = [
    "Archive",
    "ArchiveError",
    "CHECK_KERNEL",
    "CHUNK",
    "CUDA_11_8",
    "CUDA_12_4",
    "DEFAULT_KEYRING",
    "DEFAULT_MIRROR",
    "DebPackage",
    "FetchResult",
    "IndexEntry",
    "InstalledToolkit",
    "Placed",
    "Placement",
    "ReleaseIndex",
    "SpecPackage",
    "TOOLKITS",
    "ToolkitBuildError",
    "ToolkitHostError",
    "ToolkitSpec",
    "UnknownToolkitError",
    "extract_placements",
    "fetch_toolkit",
    "host_compiler_problem",
    "installed",
    "installed_toolkits",
    "integrity_problems",
    "nvcc_release",
    "parse_packages",
    "parse_release",
    "resolve_packages",
    "toolkit_spec",
    "toolkits_dir",
    "unsigned_payload",
    "verify_signature",
]
