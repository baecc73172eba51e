"""CUDA 11.8 from Debian bookworm (`aiacc-build toolkit fetch 11.8`): the recipe against the recorded
bookworm index (tests/toolkits/data/debian-bookworm/), and, opt-in, the real fetch with bookworm's g++-11.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from aiacc_build.toolkits import (
    CUDA_11_8,
    DEFAULT_KEYRING,
    ArchiveError,
    DebPackage,
    fetch_toolkit,
    integrity_problems,
    parse_packages,
    parse_release,
    resolve_packages,
    toolkit_spec,
    verify_signature,
)

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

DATA = Path(__file__).parent / "data" / "debian-bookworm"
NON_FREE = "non-free/binary-amd64/Packages"
MAIN_ALL = "main/binary-all/Packages"


def recorded_indexes() -> dict[str, dict[str, list[DebPackage]]]:
    return {
        NON_FREE: parse_packages((DATA / "non-free_binary-amd64_Packages").read_text()),
        MAIN_ALL: parse_packages((DATA / "main_binary-all_Packages").read_text()),
    }


@pytest.mark.skipif(shutil.which("gpgv") is None or not DEFAULT_KEYRING.is_file(), reason="needs gpgv and the keyring")
def test_recorded_bookworm_inrelease_verifies_and_lists_the_recipes_indexes():
    release = parse_release(verify_signature((DATA / "InRelease").read_bytes(), DEFAULT_KEYRING))
    assert release.codename == "bookworm" and release.acquire_by_hash
    assert set(CUDA_11_8.index_paths) == {NON_FREE, MAIN_ALL}
    for path in CUDA_11_8.index_paths:
        entry = release.files[path + ".xz"]
        assert len(entry.sha256) == 64 and entry.size > 0


def test_recorded_bookworm_indexes_resolve_to_one_cuda_118_toolkit():
    assert toolkit_spec("11.8") is CUDA_11_8 and CUDA_11_8.max_host_gcc == 11
    packages = {p.name: p for p in resolve_packages(CUDA_11_8, recorded_indexes())}
    assert list(packages) == [p.name for p in CUDA_11_8.packages]
    assert packages["nvidia-cuda-toolkit"].version == "11.8.89~11.8.0-5~deb12u1"
    # the runtime package keeps its soname's name; the three come from one upload
    assert packages["libcudart11.0"].version == packages["nvidia-cuda-dev"].version == "11.8.89~11.8.0-5~deb12u1"
    assert packages["libthrust-dev"].version == packages["libcub-dev"].version == "1.17.2-2"
    assert packages["libcu++-dev"].source == "libcudacxx"
    assert sum(p.size for p in packages.values()) > 800 * 1024 * 1024  # nvidia-cuda-dev: 774 MB of it


def test_a_bookworm_toolkit_of_another_cuda_is_refused():
    indexes = recorded_indexes()
    [toolkit] = indexes[NON_FREE]["nvidia-cuda-toolkit"]
    indexes[NON_FREE]["nvidia-cuda-toolkit"] = [DebPackage(**{**toolkit.__dict__, "version": "12.4.131~12.4.1-2"})]
    with pytest.raises(ArchiveError, match="not CUDA 11.8"):
        resolve_packages(CUDA_11_8, indexes)


def test_the_runtime_placement_takes_the_soname_files_only():
    [runtime] = [p for p in CUDA_11_8.placements if p.package == "libcudart11.0"]
    assert runtime.destination("usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89") == "lib64/libcudart.so.11.8.89"
    assert runtime.destination("usr/lib/x86_64-linux-gnu/libcudart.so.11.0") == "lib64/libcudart.so.11.0"
    assert runtime.destination("usr/share/doc/libcudart11.0/copyright") is None


@pytest.mark.optin("~0.9 GB from Debian bookworm, bookworm's g++-11")
def test_real_fetch_of_118_compiles_a_kernel_with_gcc_11(monkeypatch, tmp_path):
    gxx11 = shutil.which("g++-11")
    if gxx11 is None:
        pytest.fail("nvcc 11.8 accepts GCC <= 11: apt-get install g++-11")
    monkeypatch.setenv("CXX", gxx11)
    result = fetch_toolkit("11.8")  # a no-op re-check when the cache holds it intact
    prefix = result.toolkit.prefix
    assert result.toolkit.nvcc_version.startswith("11.8.") and integrity_problems(prefix) == []
    assert "verified by gpgv" in result.toolkit.signature
    (tmp_path / "k.cu").write_text("#include <cuda_bf16.h>\n__global__ void k(unsigned short* o, float v) "
                                   "{ o[0] = static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(v)).x; }\n")
    subprocess.run([str(prefix / "bin" / "nvcc"), "-ccbin", gxx11, "-arch=sm_75", "-c", str(tmp_path / "k.cu"),
                    "-o", str(tmp_path / "k.o")], check=True, capture_output=True)  # fmt: skip
