"""PyTorch: a C++ extension per CPython (perseus_torch), facts read from torch's own files, the
`pytorch` conda channel where it has the exact build, and the DDP hook `import perseus` installs."""

from __future__ import annotations

import re
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..model import Cell
from .base import (
    CondaFramework,
    FactsError,
    FrameworkAdapter,
    FrameworkFacts,
    InstallerDetection,
    interface_digest,
    wheel_record,
)

if TYPE_CHECKING:
    from ..checks.conda_rules import EnvChecker

# Members that carry the facts, relative to site-packages (the same paths inside the wheel).
TORCH_VERSION_FILE = "torch/version.py"
TORCH_CONFIG_FILE = "torch/share/cmake/Torch/TorchConfig.cmake"
# What a C++ build against torch reads: its headers and its CMake package.
TORCH_INTERFACE_PREFIXES = ("torch/include/", "torch/share/cmake/")

_CUDA_LINE = re.compile(r"^cuda(?:\s*:[^=]*)?\s*=\s*(?:'([^']*)'|\"([^\"]*)\"|None)\s*$", re.MULTILINE)
_ABI_FLAG = re.compile(r"-D_GLIBCXX_USE_CXX11_ABI=([01])")


def parse_torch_facts(version_py: str, torch_config: str | None) -> FrameworkFacts:
    """The facts from torch's version.py (`cuda = '13.0'`, None for a CPU build) and TorchConfig.cmake
    (`-D_GLIBCXX_USE_CXX11_ABI=0` on a pre-cxx11 build; no flag: the compiler's default, cxx11)."""
    match = _CUDA_LINE.search(version_py)
    if match is None:
        raise FactsError("torch/version.py has no `cuda = ...` line")
    cuda = match[1] or match[2] or None
    if cuda is not None:
        cuda = ".".join(cuda.split(".")[:2])
    flag = _ABI_FLAG.search(torch_config or "")
    return FrameworkFacts(cuda=cuda, cxx11_abi=flag is None or flag[1] == "1")


DOCTOR_PROBE = """
import json, torch
d = {"version": torch.__version__, "cuda": torch.version.cuda, "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
     "cuda_available": torch.cuda.is_available(), "devices": torch.cuda.device_count() if torch.cuda.is_available() else 0}
try:
    d["cudnn"] = torch.backends.cudnn.version()
except Exception:
    d["cudnn"] = None
import torch.distributed as dist
d["distributed"] = dist.is_available()
if d["distributed"]:
    d["gloo"] = dist.is_gloo_available(); d["nccl"] = dist.is_nccl_available(); d["mpi"] = dist.is_mpi_available()
print(json.dumps(d))
"""


class TorchAdapter(FrameworkAdapter):
    name = "torch"
    display_name = "PyTorch"
    import_name = "torch"
    tag_abbreviation = "pt"
    python_specific = True
    distributions = ("torch",)
    own_libraries = ("libtorch*", "libc10*")
    framework_dir_variable = "PERSEUS_TORCH_DIR"
    pip_build_bundles_cudnn = True
    installer = InstallerDetection(cuda_method="python-assignment", cuda_file="version.py", cuda_variable="cuda")
    doctor_probe = DOCTOR_PROBE
    runtime_hook = "perseus._torch_hook"
    conda_package: ClassVar[str | None] = "pytorch"
    reads_facts = True

    def facts_from_wheel(self, archive: zipfile.ZipFile) -> FrameworkFacts:
        names = set(archive.namelist())
        if TORCH_VERSION_FILE not in names:
            raise FactsError(f"no {TORCH_VERSION_FILE} in the wheel")
        config = archive.read(TORCH_CONFIG_FILE).decode() if TORCH_CONFIG_FILE in names else None
        facts = parse_torch_facts(archive.read(TORCH_VERSION_FILE).decode(), config)
        record = wheel_record(archive)
        if record is not None:
            facts = replace(facts, interface=interface_digest(record, TORCH_INTERFACE_PREFIXES))
        return facts

    def facts_of_installed(self, site_packages: Path) -> FrameworkFacts:
        version_py = site_packages / TORCH_VERSION_FILE
        if not version_py.is_file():
            raise FactsError(f"no torch installed in {site_packages}")
        config = site_packages / TORCH_CONFIG_FILE
        facts = parse_torch_facts(version_py.read_text(), config.read_text() if config.is_file() else None)
        records = list(site_packages.glob("torch-*.dist-info/RECORD"))
        if len(records) == 1:
            facts = replace(facts, interface=interface_digest(records[0].read_text(), TORCH_INTERFACE_PREFIXES))
        return facts

    def conda_framework(self, cell: Cell, python: str) -> CondaFramework | None:
        """PyTorch from the channel that has this exact build (matrix/facts/conda/packages.yaml), else None (pip)."""
        from ..conda_table import default_conda_table

        table = default_conda_table()
        channel = table.pytorch_channel(cell.framework_version, cell.cuda, python)
        if channel is None:
            return None
        channels = [channel]
        deps = [f"pytorch={cell.framework_version}"]
        if cell.cuda is None:
            deps.append("cpuonly")
        elif table.pytorch_cuda_era(cell.framework_version):
            channels.append("nvidia")
            deps.append(f"pytorch-cuda={cell.cuda}")
        else:
            deps.append(f"cudatoolkit={cell.cuda}")
        return CondaFramework(channels=tuple(channels), dependencies=tuple(deps))

    def check_conda(self, checker: EnvChecker) -> None:
        """The pytorch channel's conventions: one accelerator selector of the right era, a build the
        channel has for that CUDA and Python."""
        from ..conda_table import pin

        specs = checker.specs
        spec = specs.get("pytorch")
        if spec is None:
            if "cpuonly" in specs or "pytorch-cuda" in specs:
                checker.fail("pytorch-variant-without-pytorch", "pytorch", "cpuonly / pytorch-cuda select a PyTorch build but the file installs no pytorch")
            return
        found = checker.provider("pytorch")
        version = pin(spec)
        if found is None or version is None or found[1].not_our_convention:
            return  # reported by the availability rule
        channel, package = found
        accelerators = [n for n in ("cpuonly", "pytorch-cuda", "cudatoolkit") if n in specs]
        if not accelerators:
            checker.fail("pytorch-variant", "pytorch", "pytorch without cpuonly / pytorch-cuda / cudatoolkit: conda may pick a CPU or any CUDA build")
            return
        cuda = None if "cpuonly" in specs else pin(specs.get("pytorch-cuda") or specs.get("cudatoolkit"))
        if "cpuonly" in specs and len(accelerators) > 1:
            checker.fail("pytorch-variant", "cpuonly", f"cpuonly together with {accelerators[1]}: the CPU build and a CUDA pin exclude each other")
            return
        table = checker.table
        new_era = table.pytorch_cuda_era(version)
        first = table.conventions.pytorch_cuda_first_torch
        if cuda is not None and new_era and "cudatoolkit" in specs:
            checker.fail(
                "era-pytorch-cuda",
                specs["cudatoolkit"].text,
                f"PyTorch {version} on the pytorch channel selects CUDA with `pytorch-cuda={cuda}` (from {first} on), not cudatoolkit",
            )
        if cuda is not None and not new_era and "pytorch-cuda" in specs:
            checker.fail(
                "era-pytorch-cuda",
                specs["pytorch-cuda"].text,
                f"PyTorch {version} predates pytorch-cuda (from {first} on): pin `cudatoolkit={cuda}`",
            )
        python = pin(specs.get("python"))
        builds = [b for b in package.builds if b.version == version]
        if not builds:
            return  # a version the table lists only as `versions`: nothing finer to check
        build = builds[0]
        source = table.source_url(build.source)
        if cuda is None and not build.cpu:
            checker.fail("pytorch-build", spec.text, f"{channel} has no CPU build of PyTorch {version} ({source})")
        if cuda is not None and cuda not in build.cuda:
            checker.fail("pytorch-build", spec.text, f"{channel} has PyTorch {version} for CUDA {', '.join(build.cuda)}, not {cuda} ({source})")
        if python is not None and python not in build.pythons:
            checker.fail("pytorch-build", spec.text, f"{channel} has PyTorch {version} for Python {', '.join(build.pythons)}, not {python} ({source})")
