"""A binding that adds native/core learns whether the core has CUDA (PERSEUS_CUDA_ENABLED, and the toolkit for its
manifest). Before this was passed up, the torch binding of every CUDA cell compiled no CUDA op source
(src/ops_cuda.cpp), had no device buffers in its engine, and wrote `cuda_toolkit: null` in its manifest."""
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

CORE = Path(__file__).resolve().parents[2] / "native" / "core"
NVCC = Path("/usr/local/cuda/bin/nvcc")


@pytest.mark.skipif(not NVCC.exists() or shutil.which("cmake") is None, reason="needs nvcc at /usr/local/cuda and cmake")
def test_a_parent_project_sees_the_cores_cuda_and_toolkit(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(parent LANGUAGES CXX)\n"
        "set(PERSEUS_BUILD_TESTS OFF CACHE BOOL \"\" FORCE)\n"
        "add_subdirectory({} core)\n"
        "message(STATUS \"parent sees CUDA=${{PERSEUS_CUDA_ENABLED}} toolkit=${{CMAKE_CUDA_COMPILER_VERSION}}\")\n"
        .format(CORE.as_posix()))
    done = subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "build"), "-DPERSEUS_WITH_CUDA=ON",
                           "-DCMAKE_CUDA_COMPILER={}".format(NVCC), "-DPERSEUS_CUDA_ARCHITECTURES=90"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    seen = [line for line in done.stdout.splitlines() if "parent sees" in line]
    assert seen, done.stdout[-3000:]
    assert "CUDA=ON" in seen[0], seen[0]
    toolkit = seen[0].split("toolkit=", 1)[1].strip()
    assert toolkit.split(".")[0].isdigit(), seen[0]  # e.g. 13.0.88
