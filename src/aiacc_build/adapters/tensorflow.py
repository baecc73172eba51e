"""TensorFlow: an op library loaded by tf.load_op_library (one Python-independent wheel per TF build),
from pip only. No binding exists yet: its cells are rendered and listed, never built."""

from __future__ import annotations

from .base import FrameworkAdapter, InstallerDetection

DOCTOR_PROBE = """
import json, os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
info = tf.sysconfig.get_build_info() if hasattr(tf.sysconfig, "get_build_info") else {}
print(json.dumps({"version": tf.__version__, "cuda": info.get("cuda_version"), "cudnn": info.get("cudnn_version"),
                  "cxx11_abi": bool(tf.sysconfig.CXX11_ABI_FLAG), "cuda_built": bool(info.get("is_cuda_build"))}))
"""


class TensorflowAdapter(FrameworkAdapter):
    name = "tensorflow"
    display_name = "TensorFlow"
    import_name = "tensorflow"
    tag_abbreviation = "tf"
    python_specific = False
    distributions = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-aarch64", "intel-tensorflow", "tf-nightly")
    binding_missing = "not supported yet: no tensorflow binding (native/bindings/tensorflow) exists"
    own_libraries = ("libtensorflow_framework*",)
    installer = InstallerDetection(cuda_method="tensorflow-build-info", cpu_distributions=("tensorflow-cpu",))
    doctor_probe = DOCTOR_PROBE
