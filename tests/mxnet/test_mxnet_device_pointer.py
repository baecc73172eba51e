"""perseus.mxnet's device path on the CPU MXNet of the MXNet environment (tests/mxnet/workers/device_path.py):
the pointer helper on real NDArrays, the device arithmetic against the host path's, and the CPU wheel refusing
a GPU context through the public API. No GPU MXNet runs here: the device submission itself is untested."""

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "workers" / "device_path.py"


@pytest.fixture(scope="module")
def found(mxnet_python):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "native" / "runtime"),
                                                       str(REPO_ROOT / "native" / "bindings" / "mxnet")]))
    env.pop("PERSEUS_ENGINE_LIBRARY", None)  # the engine linked into perseus_mxnet's library
    proc = subprocess.run([mxnet_python, str(WORKER)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_pointer_is_taken_after_mxnets_queued_writes(found):
    assert found["queued_write_landed"]
    assert found["unordered_misses"] >= 1  # the control: without the wait the bytes are not there yet
    assert found["bytes_equal"]


def test_pointer_of_a_slice_includes_its_offset(found):
    assert found["slice_offset"] == 4 * 4  # one row of 4 float32


def test_a_write_through_the_pointer_is_what_mxnet_reads_next(found):
    assert found["write_seen"] == [7, -1, 3, 9]


def test_device_arithmetic_is_the_host_paths(found):
    assert found["arithmetic_mismatches"] == []


def test_host_ndarrays_do_not_read_the_device_report(found):
    assert found["cpu_path"] == "host"
    assert found["report_read_for_cpu"] is False


def test_cpu_wheel_refuses_a_gpu_ndarray_naming_the_wheel(found):
    assert found["device_buffers"] is False  # the CPU wheel's engine: no device buffers
    assert found["manifest"].startswith("perseus_mxnet ") and found["manifest"].endswith("(built for mxnet 1.9.1, "
                                                                                        "CPU only)")
    for call, message in found["refusals"].items():
        assert message is not None, call
        assert message.startswith("not supported: a GPU NDArray (gpu(0)) on " + found["manifest"]), message
        assert "install the perseus_mxnet wheel of your mxnet's CUDA cell" in message
        assert "bash install_AIACC-Training.sh" in message
