"""The TensorFlow adapter's facts: CUDA from build_info.py as every era writes it, the C++ ABI from the
version (TensorFlow's pip builds switched to cxx11 in 2.9), the framework library's folder."""
import zipfile
from pathlib import Path

import pytest

from aiacc_build.adapters.base import FactsError
from aiacc_build.adapters.tensorflow import TensorflowAdapter, parse_build_info

CPU_221 = "build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False), ('is_tensorrt_build', False)])\n"
CUDA_214 = ("build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-16/bin/clang'), "
            "('cuda_compute_capabilities', ['sm_35']), ('cuda_version', '11.8'), ('cudnn_version', '8'), "
            "('is_cuda_build', True), ('is_rocm_build', False)])\n")
CUDA_DICT = "build_info = {'cuda_version': '10.1', 'cudnn_version': '7', 'is_cuda_build': True}\n"


@pytest.mark.parametrize("text,cuda", [(CPU_221, None), (CUDA_214, "11.8"), (CUDA_DICT, "10.1"), (None, None)])
def test_build_info_cuda(text, cuda):
    assert parse_build_info(text) == cuda


def _wheel(path: Path, dist: str, build_info) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{dist}.dist-info/METADATA", "Name: x\n")
        if build_info is not None:
            archive.writestr("tensorflow/python/platform/build_info.py", build_info)
    return path


def test_facts_from_wheels(tmp_path):
    adapter = TensorflowAdapter()
    with zipfile.ZipFile(_wheel(tmp_path / "a.whl", "tensorflow_cpu-2.21.0", CPU_221)) as archive:
        facts = adapter.facts_from_wheel(archive)
    assert (facts.cuda, facts.cxx11_abi) == (None, True)
    with zipfile.ZipFile(_wheel(tmp_path / "b.whl", "tensorflow-2.8.4", CUDA_214)) as archive:
        facts = adapter.facts_from_wheel(archive)
    assert (facts.cuda, facts.cxx11_abi) == ("11.8", False)
    with zipfile.ZipFile(_wheel(tmp_path / "c.whl", "keras-3.0.0", None)) as archive, pytest.raises(FactsError):
        adapter.facts_from_wheel(archive)


def test_facts_of_installed_and_library_dir(tmp_path):
    adapter = TensorflowAdapter()
    (tmp_path / "tensorflow_cpu-2.21.0.dist-info").mkdir()
    (tmp_path / "tensorflow_cpu-2.21.0.dist-info" / "METADATA").write_text("Name: tensorflow-cpu\n")
    (tmp_path / "tensorflow" / "python" / "platform").mkdir(parents=True)
    (tmp_path / "tensorflow" / "python" / "platform" / "build_info.py").write_text(CPU_221)
    facts = adapter.facts_of_installed(tmp_path)
    assert (facts.cuda, facts.cxx11_abi) == (None, True)
    assert adapter.library_dirs(tmp_path) == [tmp_path / "tensorflow"]  # libtensorflow_framework.so.2 lies there
    assert adapter.binding_missing is None
