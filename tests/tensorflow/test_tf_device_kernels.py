"""Which devices the perseus ops have kernels for, read from TensorFlow's kernel registry (no GPU needed: a kernel
is registered when the op library loads, whether or not a GPU exists; OPS.md lists the device kernels).

- Every build: the CPU wheel in this environment registers a CPU kernel of every perseus op and no DEVICE_GPU
  kernel, and its manifest says device_code false.
- The link step's device-code check (build_support/check_device_code.cmake) refuses a library without device code
  and passes a CUDA cell's.
- A CUDA cell's wheel, when one was built under build/cuda-dist (tensorflow-2.14.1/cuda11.8, the cell whose nvcc
  this machine can have; CI builds only the CPU cells): a DEVICE_GPU kernel of every op, allgather's tensor and
  build_info's strings in host memory, and the manifest's device_code true with the core's architectures.
"""
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import optin_envs

pytestmark = pytest.mark.integration  # starts processes (tests/support/fast_tier.py)

WORKER = Path(__file__).resolve().parent / "workers" / "tf_kernel_registry.py"
OPS = {"PerseusAllgather", "PerseusAllreduce", "PerseusBroadcast", "PerseusBuildInfo", "PerseusCompress",
       "PerseusDecompress"}
# the device kernels' host-memory arguments (OPS.md): none for the others
HOST_MEMORY = {"PerseusAllgather": ["gathered", "tensor"], "PerseusBuildInfo": ["core_version", "dispatch", "manifest"]}


def registry_of(python):
    done = subprocess.run([str(python), str(WORKER)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300, env=optin_envs.pip_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def devices(entries):
    return sorted(e["device"] for e in entries)


def test_a_cpu_wheel_registers_no_gpu_kernel(tf, ops):
    report = registry_of(sys.executable)
    if report["manifest"]["tensorflow_cuda"] is not None:
        pytest.skip("this environment's perseus_tensorflow is a CUDA cell's wheel, not a CPU one")
    assert set(report["kernels"]) == OPS, sorted(report["kernels"])
    for name, entries in report["kernels"].items():
        assert devices(entries) == ["CPU"], (name, entries)
    assert report["manifest"]["device_code"] is False and report["manifest"]["cuda_toolkit"] is None


def test_a_cuda_cell_wheel_registers_a_gpu_kernel_of_every_op():
    wheels = optin_envs.tf214_cuda_wheels()
    if wheels is None:
        pytest.skip("no CUDA cell wheel under %s: build one with `CXX=g++-11 aiacc-build build --cells %s --dist "
                    "build/cuda-dist` (needs `aiacc-build toolkit fetch 11.8`; CI builds only the CPU cells)"
                    % (optin_envs.CUDA_DIST, optin_envs.TF214_CUDA_CELL))
    report = registry_of(optin_envs.tf214_cuda_python(*wheels))
    assert set(report["kernels"]) == OPS, sorted(report["kernels"])
    for name, entries in report["kernels"].items():
        assert devices(entries) == ["CPU", "GPU"], (name, entries)
        gpu = [e for e in entries if e["device"] == "GPU"][0]
        assert gpu["host_memory"] == HOST_MEMORY.get(name, []), (name, gpu)
    manifest = report["manifest"]
    assert manifest["tensorflow_cuda"] == "11.8" and manifest["cuda_toolkit"].startswith("11.8"), manifest
    assert manifest["device_code"] is True and manifest["cuda_architectures"], manifest


CHECK = Path(__file__).resolve().parents[2] / "native" / "bindings" / "tensorflow" / "build_support" / "check_device_code.cmake"
# the provisioned CUDA 11.8 toolkit's (the cell's own), else a system toolkit's
CUOBJDUMPS = [optin_envs.REPO_ROOT / ".cache" / "aiacc-build" / "toolkits" / "cuda-11.8" / "bin" / "cuobjdump",
              Path("/usr/local/cuda/bin/cuobjdump")]


def cuobjdump():
    found = [p for p in CUOBJDUMPS if p.is_file()]
    if not found:
        pytest.skip("no cuobjdump (aiacc-build toolkit fetch 11.8, or a CUDA toolkit at /usr/local/cuda)")
    return found[0]


def run_check(library):
    if shutil.which("cmake") is None:
        pytest.skip("no cmake on PATH")
    return subprocess.run(["cmake", "-DCUOBJDUMP=%s" % cuobjdump(), "-DLIBRARY=%s" % library, "-P", str(CHECK)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)


def test_the_link_check_refuses_an_op_library_without_device_code(ops):
    from perseus.tensorflow import _native
    manifest = _native.build_manifest()
    if manifest["device_code"]:
        pytest.skip("this environment's perseus_tensorflow carries device code")
    done = run_check(_native.library_path())
    assert done.returncode != 0 and "no device code" in done.stdout, done.stdout[-2000:]


def test_the_link_check_passes_a_cuda_cell_op_library(tmp_path):
    wheels = optin_envs.tf214_cuda_wheels()
    if wheels is None:
        pytest.skip("no CUDA cell wheel under %s" % optin_envs.CUDA_DIST)
    with zipfile.ZipFile(str(wheels[0])) as wheel:
        library = wheel.extract("perseus/tensorflow/_perseus_tf_ops.so", str(tmp_path))
    done = run_check(library)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "ELF file" in done.stdout and "device code in" in done.stdout, done.stdout
