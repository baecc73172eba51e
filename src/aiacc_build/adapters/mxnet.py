"""MXNet: a library loaded through ctypes (one Python-independent wheel per MXNet build), from pip only;
each CUDA build is its own distribution (mxnet-cu117). No binding exists yet: its cells are rendered and
listed, never built."""

from __future__ import annotations

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
    binding_missing = "not supported yet: no mxnet binding (native/bindings/mxnet) exists"
    own_libraries = ("libmxnet*",)
    installer = InstallerDetection(cuda_method="distribution-suffix")
    doctor_probe = DOCTOR_PROBE
