"""MXNet: a library loaded through ctypes (one Python-independent wheel per MXNet build, native/bindings/mxnet),
from pip only; each CUDA build is its own distribution (mxnet-cu117). The binding compiles against the
headers the mxnet wheel ships (mxnet/include) and never links libmxnet.so, which lies in the package
folder itself (not in a lib/ folder)."""

from __future__ import annotations

from pathlib import Path

from .base import FrameworkAdapter, InstallerDetection

DOCTOR_PROBE = """
import json, mxnet as mx
f = mx.runtime.Features()
print(json.dumps({"version": mx.__version__, "cuda": "yes" if f.is_enabled("CUDA") else None,
                  "nccl": f.is_enabled("NCCL"), "cxx11_abi": None}))
"""


class MxnetAdapter(FrameworkAdapter):
    name = "mxnet"
    display_name = "MXNet"
    import_name = "mxnet"
    tag_abbreviation = "mx"
    python_specific = False
    distributions = ("mxnet", "mxnet-mkl", "mxnet-native")
    distribution_pattern = r"mxnet-cu\d+(mkl)?"
    binding_missing = None
    own_libraries = ("libmxnet*",)
    framework_dir_variable = "PERSEUS_MXNET_DIR"
    companion_requirements = ("numpy<1.24",)
    installer = InstallerDetection(cuda_method="distribution-suffix")
    doctor_probe = DOCTOR_PROBE

    def library_dirs(self, site_packages: Path) -> list[Path]:
        """libmxnet.so (and the libraries it carries) lie in the package folder itself."""
        return [p for p in (self.framework_dir(site_packages),) if p.is_dir()]
