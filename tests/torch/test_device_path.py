"""perseus.torch's device path (CUDA tensors through the engine's device buffers, _device.py).

Without a GPU (CI) the path's refusals are checked: a binding whose engine has no device buffers names the wheel
to install, a dtype the engine lacks is named. With a GPU, two ranks on GPU 0 compare every collective on CUDA
tensors with the same call on host tensors (the same worker bench/gpu_device_check.py --torch runs on a lent
GPU machine)."""

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from perseus_harness import launch  # noqa: E402

from perseus.torch import _comm, _device, _native  # noqa: E402

WORKER = Path(__file__).resolve().parent / "workers" / "device_collectives.py"


def test_a_cuda_tensor_on_a_binding_without_device_buffers_names_the_wheel_to_install():
    _comm.load_library()
    if _device.report()["built"]:
        pytest.skip("this binding's engine has device buffers (a CUDA build)")
    with pytest.raises(_device.DevicePathError) as caught:
        _device.check_supported(torch.empty(1))
    message = str(caught.value)
    assert message.startswith("not supported: a CUDA tensor on ")
    try:
        manifest = _native.read_manifest()
    except ImportError:  # perseus.torch imported from the source tree: no manifest to name the wheel by
        assert "this perseus_torch" in message
    else:
        assert "perseus_torch {} (built for torch {}".format(manifest["version"], manifest["torch_version"]) in message
    assert "install_AIACC-Training.sh" in message


def test_a_dtype_the_engine_lacks_is_refused_by_name():
    with pytest.raises(TypeError, match="complex64"):
        _device.engine_dtype(torch.zeros(2, dtype=torch.complex64))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device: bench/gpu_device_check.py --torch "
                                                          "runs this worker on a lent GPU machine")
def test_cuda_tensors_give_the_host_results_two_ranks_on_one_gpu():
    ranks = launch(str(WORKER), 2, timeout=300)
    for r in ranks:
        report = json.loads(r.stdout.split("REPORT ", 1)[1].splitlines()[0])
        assert report["device_report"]["built"] == 1
        failed = {k: v for k, v in report["cases"].items() if not v.get("equal")}
        assert not failed, failed
