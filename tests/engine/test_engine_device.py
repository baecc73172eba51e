"""Device buffers on a machine without a GPU (what runs here): the C ABI version the Python handle checks,
NCCL from PyPI's nvidia-nccl-cu12 wheel loaded and its version read, its absence named with the pip package,
and a 2-rank job whose device submissions fail on every rank with one message while the job ends cleanly.
The GPU runs (1-rank NCCL, 2 ranks through Gloo, the kernels vs the CPU path) are bench/gpu_device_check.py
on a lent GPU machine; multi-GPU NCCL runs are CI-only (docs/device.md)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine_helpers import REPO_ROOT, base_env, free_ports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

WORKER = Path(__file__).resolve().parent / "workers" / "device_cases.py"
RUNTIME = REPO_ROOT / "native" / "runtime"
ENGINE_HEADER = REPO_ROOT / "native" / "engine" / "include" / "perseus" / "engine.h"


@pytest.fixture(scope="session")
def nccl_site():
    """The folder recipes/nccl/fetch.sh unpacks the pinned wheels into (189 MB once, then cached)."""
    done = subprocess.run(["bash", str(REPO_ROOT / "recipes" / "nccl" / "fetch.sh")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="session")
def device_library(engine_library, nccl_site):
    out = run_worker(engine_library, "report", {"PYTHONPATH": os.pathsep.join([str(RUNTIME), nccl_site])})
    if not out["device"]["built"]:
        pytest.fail("{} was built without device buffers: configure native/ with -DPERSEUS_ENGINE_DEVICE=ON "
                    "(dev/lib.sh's native_core_ctest does)".format(engine_library))
    return engine_library


def run_worker(library, case, extra):
    done = subprocess.run([sys.executable, str(WORKER), case], env=base_env(library, extra), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.split("REPORT ", 1)[1])


def test_the_python_handle_refuses_another_c_abi_version(engine_library, tmp_path):
    old = tmp_path / "libold_engine.so"
    src = tmp_path / "old.c"
    src.write_text("int perseus_engine_abi_version(void) { return 2; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(old), str(src)], check=True)
    probe = ("from perseus.engine import _library\n"
             "print(_library.load({real!r}).perseus_engine_abi_version())\n"
             "_library._lib = None\n"
             "try:\n    _library.load({old!r})\nexcept _library.EngineLibraryError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", probe.format(real=engine_library, old=str(old))],
                          env=base_env(engine_library), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60)
    assert done.returncode == 0, done.stderr
    real_version, message = done.stdout.strip().splitlines()
    declared = re.search(r"#define PERSEUS_ENGINE_ABI_VERSION (\d+)", ENGINE_HEADER.read_text()).group(1)
    assert real_version == declared  # the library, its header and the Python handle speak one version
    assert "has C ABI version 2, this module speaks {}".format(declared) in message


def test_nccl_of_the_pip_wheel_is_loaded_and_its_version_read(device_library, nccl_site):
    found = run_worker(device_library, "report", {"PYTHONPATH": os.pathsep.join([str(RUNTIME), nccl_site])})["device"]
    assert found["nccl_version"] == 22105, found  # nvidia-nccl-cu12 2.21.5, as the recipe pins
    assert found["nccl_library"] == os.path.join(nccl_site, "nvidia", "nccl", "lib", "libnccl.so.2")
    assert found["nccl_message"] == ""


def test_without_nccl_the_report_names_the_pip_package(device_library):
    found = run_worker(device_library, "report", {"PYTHONPATH": str(RUNTIME),
                                                  "PERSEUS_NCCL_LIBRARY": "/nonexistent/libnccl.so.2"})["device"]
    assert found["nccl_version"] == 0
    assert "PERSEUS_NCCL_LIBRARY=/nonexistent/libnccl.so.2" in found["nccl_message"]
    assert "pip install nvidia-nccl-cu12" in found["nccl_message"]


def test_two_ranks_fail_device_submits_with_one_message_and_end_cleanly(device_library, nccl_site):
    master, port = free_ports(2)
    envs = [{"RANK": str(r), "WORLD_SIZE": "2", "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
             "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(port),
             "PYTHONPATH": os.pathsep.join([str(RUNTIME), nccl_site])} for r in range(2)]
    procs = [subprocess.Popen([sys.executable, str(WORKER), "no_device"], env=base_env(device_library, e),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              start_new_session=True) for e in envs]
    try:
        done = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [rc for rc, _, _ in done] == [0, 0], [err for _, _, err in done]
    found = [json.loads(out.split("REPORT ", 1)[1]) for _, out, _ in done]
    if "skipped" in found[0]:
        pytest.skip(found[0]["skipped"])
    for rank, f in enumerate(found):
        assert f["host"] == [3.0] * 4  # the engine works on with host buffers
        assert f["nccl_version"] == 22105
        for kind, error_type, message in f["errors"]:
            assert error_type == "UnsupportedError", (kind, message)
            assert message.startswith("not supported: no CUDA device visible (cudaGetDeviceCount="), message
    assert found[0]["errors"] == found[1]["errors"]  # one message on every rank
