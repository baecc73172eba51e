"""TensorFlow: an op library loaded by tf.load_op_library (one Python-independent wheel per TF build,
native/bindings/tensorflow), from pip only.

Facts of a TensorFlow wheel: CUDA from `tensorflow/python/platform/build_info.py` (`build_info`'s
`cuda_version` / `is_cuda_build`; absent or False: a CPU build). The C++ ABI is not stated in a file the
wheel carries as text (tf.sysconfig.CXX11_ABI_FLAG comes from a compiled module), so the facts give the
ABI of TensorFlow's own manylinux builds: pre-cxx11 up to 2.8, cxx11 from 2.9 on (manylinux2014 with
devtoolset-9 switched it); the binding's build takes the real flag from tf.sysconfig and its manifest
records it, so a wrong guess here can only defer a cell, never build a wrong wheel.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import ClassVar

from .base import FactsError, FrameworkAdapter, FrameworkFacts, InstallerDetection

BUILD_INFO_FILE = "tensorflow/python/platform/build_info.py"
VERSION_FILE_PATTERN = re.compile(r"^tensorflow(?:_cpu|_gpu)?-(\d+)\.(\d+)[^/]*\.dist-info/METADATA$")
_CUDA = re.compile(r"""['"]cuda_version['"]\s*[:,]\s*['"]([0-9.]+)['"]""")
_IS_CUDA = re.compile(r"""['"]is_cuda_build['"]\s*[:,]\s*(True|False)""")
FIRST_CXX11_ABI = (2, 9)
PYTHON_VARIABLE = "PERSEUS_TENSORFLOW_PYTHON"  # read by native/bindings/tensorflow/build_support/tensorflow_info.py

DOCTOR_PROBE = """
import json, os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
info = tf.sysconfig.get_build_info() if hasattr(tf.sysconfig, "get_build_info") else {}
print(json.dumps({"version": tf.__version__, "cuda": info.get("cuda_version"), "cudnn": info.get("cudnn_version"),
                  "cxx11_abi": bool(tf.sysconfig.CXX11_ABI_FLAG), "cuda_built": bool(info.get("is_cuda_build"))}))
"""


def parse_build_info(text: str | None) -> str | None:
    """The CUDA major.minor of TensorFlow's build_info.py, None for a CPU build (or no file: TF < 2.3 CPU)."""
    if not text:
        return None
    is_cuda = _IS_CUDA.search(text)
    cuda = _CUDA.search(text)
    if cuda is None or (is_cuda is not None and is_cuda[1] == "False"):
        return None
    return ".".join(cuda[1].split(".")[:2])


def abi_of_version(major: int, minor: int) -> bool:
    """TensorFlow's pip builds use the cxx11 ABI from 2.9 on."""
    return (major, minor) >= FIRST_CXX11_ABI


class TensorflowAdapter(FrameworkAdapter):
    name = "tensorflow"
    display_name = "TensorFlow"
    import_name = "tensorflow"
    tag_abbreviation = "tf"
    python_specific = False
    distributions = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-aarch64", "intel-tensorflow", "tf-nightly")
    binding_missing: ClassVar[str | None] = None
    own_libraries = ("libtensorflow_framework*",)
    installer = InstallerDetection(cuda_method="tensorflow-build-info", cpu_distributions=("tensorflow-cpu",))
    doctor_probe = DOCTOR_PROBE
    reads_facts = True

    def library_dirs(self, site_packages: Path) -> list[Path]:
        """libtensorflow_framework.so.N lies in the package folder itself (auditwheel must see it to exclude it)."""
        directory = self.framework_dir(site_packages)
        return [directory] if directory.is_dir() else []

    def build_environment(self, site_packages: Path) -> dict[str, str]:
        """tf.sysconfig's flags come from importing TensorFlow, so a backend in another env (a cp36 cell:
        scikit-build-core needs Python >= 3.7) runs the cell's own interpreter for them
        (native/bindings/tensorflow/build_support/tensorflow_info.py)."""
        return {PYTHON_VARIABLE: str(site_packages.parents[2] / "bin" / "python")}

    @property
    def build_variables(self) -> tuple[str, ...]:
        return (PYTHON_VARIABLE,)

    def facts_from_wheel(self, archive: zipfile.ZipFile) -> FrameworkFacts:
        names = archive.namelist()
        versions = [m for m in (VERSION_FILE_PATTERN.match(n) for n in names) if m]
        if len(versions) != 1:
            raise FactsError("not one tensorflow*.dist-info/METADATA in the wheel")
        text = archive.read(BUILD_INFO_FILE).decode() if BUILD_INFO_FILE in names else None
        major, minor = int(versions[0][1]), int(versions[0][2])
        return FrameworkFacts(cuda=parse_build_info(text), cxx11_abi=abi_of_version(major, minor))

    def facts_of_installed(self, site_packages: Path) -> FrameworkFacts:
        metas = [m for m in (VERSION_FILE_PATTERN.match(p.relative_to(site_packages).as_posix())
                             for p in site_packages.glob("tensorflow*.dist-info/METADATA")) if m]
        if len(metas) != 1:
            raise FactsError(f"not one TensorFlow installed in {site_packages}")
        build_info = site_packages / BUILD_INFO_FILE
        text = build_info.read_text() if build_info.is_file() else None
        return FrameworkFacts(cuda=parse_build_info(text), cxx11_abi=abi_of_version(int(metas[0][1]), int(metas[0][2])))
