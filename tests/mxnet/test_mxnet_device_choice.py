"""Which path perseus.mxnet gives an NDArray of each context, and the refusal of a GPU NDArray on an engine without
device buffers (perseus/mxnet/_device.py, loaded without mxnet: no GPU MXNet can run here, and the fast tier's
Python has no MXNet at all). The pointer helper and the refusal through the public API on a real CPU wheel:
test_mxnet_device_pointer.py."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BINDING = Path(__file__).resolve().parents[2] / "native" / "bindings" / "mxnet"
_spec = importlib.util.spec_from_file_location("perseus_mxnet_device", BINDING / "perseus" / "mxnet" / "_device.py")
device = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(device)  # type: ignore[union-attr]

CPU_WHEEL = {"version": "2.0.0+1.9.1", "mxnet_version": "1.9.1", "mxnet_cuda": None}
CUDA_WHEEL = {"version": "2.0.0+1.9.1", "mxnet_version": "1.9.1", "mxnet_cuda": "11.7"}


@pytest.mark.parametrize("context", ["cpu", "cpu_pinned", "cpu_shared"])
@pytest.mark.parametrize("device_buffers", [False, True])
def test_host_contexts_take_the_host_path_whatever_the_engine(context, device_buffers):
    assert device.choose_path(context, device_buffers, CPU_WHEEL) == device.HOST


def test_gpu_takes_the_device_path_when_the_engine_has_device_buffers():
    assert device.choose_path("gpu", True, CUDA_WHEEL, "gpu(1)") == device.DEVICE


def test_gpu_on_a_cpu_only_wheel_names_the_wheel_to_install():
    with pytest.raises(device.DevicePathError) as info:
        device.choose_path("gpu", False, CPU_WHEEL, "gpu(0)")
    assert str(info.value) == (
        "not supported: a GPU NDArray (gpu(0)) on perseus_mxnet 2.0.0+1.9.1 (built for mxnet 1.9.1, CPU only), "
        "whose engine has no device buffers: install the perseus_mxnet wheel of your mxnet's CUDA cell "
        "(bash install_AIACC-Training.sh picks it), or build the binding against a CUDA build of mxnet "
        "(native/bindings/mxnet turns the engine's device buffers on for it)")
    assert isinstance(info.value, RuntimeError)  # what MXNet's own errors are (MXNetError)


def test_gpu_on_a_cuda_wheel_without_device_buffers_says_which_wheel_it_is():
    with pytest.raises(device.DevicePathError, match=r"on perseus_mxnet 2\.0\.0\+1\.9\.1 \(built for mxnet-cu117 "
                                                     r"1\.9\.1, CUDA 11\.7\), whose engine has no device buffers"):
        device.choose_path("gpu", False, CUDA_WHEEL, "gpu(0)")


def test_unreadable_manifest_still_names_the_package():
    with pytest.raises(device.DevicePathError, match="on this perseus_mxnet, whose engine"):
        device.choose_path("gpu", False, None)


def test_an_unknown_context_is_refused():
    with pytest.raises(device.DevicePathError, match="an NDArray of context cpu_foo"):
        device.choose_path("cpu_foo", True, CUDA_WHEEL)


class _Context:
    """A stand-in for mx.gpu(0)'s context: CPU MXNet cannot allocate an NDArray on a GPU (path choice only)."""

    def __init__(self, device_type):
        self.device_type = device_type


class _Array:
    def __init__(self, device_type):
        self.context = _Context(device_type)


def test_path_of_a_host_ndarray_never_reads_the_device_report():
    # the report (and the package's relative imports, absent in this standalone module) is never reached
    assert device.path_of(_Array("cpu")) == device.HOST
    assert device._device_buffers is None


def test_dtype_names_are_checked_with_the_host_paths_message():
    assert device.dtype_name(np.zeros(2, np.float32), ("float32",)) == "float32"
    with pytest.raises(TypeError, match=r"perseus.mxnet: dtype bool is not supported here \(one of float32, int32\)"):
        device.dtype_name(np.zeros(2, np.bool_), ("float32", "int32"))
