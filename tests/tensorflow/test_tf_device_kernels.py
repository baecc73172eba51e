"""Which devices the perseus ops have kernels for, read from TensorFlow's kernel registry (no GPU needed: a kernel
is registered when the op library loads, whether or not a GPU exists; OPS.md lists the device kernels).

- Every build: the CPU wheel in this environment registers a CPU kernel of every perseus op and no DEVICE_GPU
  kernel, and its manifest says device_code false.
- A CUDA cell's wheel, when one was built under build/cuda-dist (tensorflow-2.14.1/cuda11.8, the cell whose nvcc
  this machine can have; CI builds only the CPU cells): a DEVICE_GPU kernel of every op, allgather's tensor and
  build_info's strings in host memory, and the manifest's device_code true with the core's architectures.
"""
import json
import subprocess
import sys
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
