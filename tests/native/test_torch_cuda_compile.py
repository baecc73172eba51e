"""The CUDA op sources of perseus_torch compile against the installed torch's headers (no GPU and no
CUDA torch needed: the object is compiled, never linked). A CUDA wheel is built in CI."""
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

BINDING = os.path.join(os.path.dirname(__file__), "..", "..", "native", "bindings", "torch")
NVCC = os.environ.get("CUDACXX", "/usr/local/cuda/bin/nvcc")


@pytest.mark.slow
def test_ops_cuda_compiles_against_torch_headers(torch, tmp_path):
    if not os.path.isfile(NVCC) or shutil.which("ninja") is None and not os.path.isfile(
            os.path.join(os.path.dirname(sys.executable), "ninja")):
        pytest.skip("needs nvcc (%s) and ninja" % NVCC)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    configure = subprocess.run(
        ["cmake", "-S", BINDING, "-B", str(tmp_path), "-G", "Ninja", "-DPython_EXECUTABLE=" + sys.executable,
         "-DPERSEUS_TORCH_CUDA_COMPILE_CHECK=ON", "-DCMAKE_CUDA_COMPILER=" + NVCC,
         "-DCUDAToolkit_ROOT=" + os.path.dirname(os.path.dirname(NVCC))],
        capture_output=True, text=True, env=env, timeout=300)
    assert configure.returncode == 0, configure.stdout[-3000:] + configure.stderr[-3000:]
    build = subprocess.run(["cmake", "--build", str(tmp_path), "--target", "perseus_torch_cuda_compile_check"],
                           capture_output=True, text=True, env=env, timeout=600)
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr[-3000:]
    objects = [name for _, _, files in os.walk(str(tmp_path)) for name in files if name == "ops_cuda.cpp.o"]
    assert objects == ["ops_cuda.cpp.o"]
