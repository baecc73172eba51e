"""perseus.torch's device path (CUDA tensors through the engine's device buffers, _device.py).

Without a GPU (CI) the path's refusals are checked: a binding whose engine has no device buffers names the wheel
to install, a dtype the engine lacks is named. With a GPU, two ranks on GPU 0 compare every collective on CUDA
tensors with the same call on host tensors (the same worker bench/gpu_device_check.py --torch runs on a lent
GPU machine)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from perseus_harness import launch  # noqa: E402

from perseus.torch import _device  # noqa: E402

WORKER = Path(__file__).resolve().parent / "workers" / "device_collectives.py"


_REFUSAL_PROBE = """
import json, torch
from perseus.torch import _comm, _device, _native
_comm.load_library()
out = {"built": _device.report()["built"], "torch": torch.__version__}
try:
    _device.check_supported(torch.empty(1))
except _device.DevicePathError as error:
    out["message"] = str(error)
try:
    manifest = _native.read_manifest()
    out["wheel"] = "perseus_torch {} (built for torch {}".format(manifest["version"], manifest["torch_version"])
except ImportError:
    out["wheel"] = None
print(json.dumps(out))
"""


def test_a_cuda_tensor_on_a_binding_without_device_buffers_names_the_wheel_to_install():
    # its own process: the engine library is loaded once per process, and other tests load another one
    done = subprocess.run([sys.executable, "-c", _REFUSAL_PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if found["built"]:
        pytest.skip("this binding's engine has device buffers (a CUDA build)")
    message = found["message"]
    assert message.startswith("not supported: a CUDA tensor on ")
    assert (found["wheel"] or "this perseus_torch") in message  # the wheel by its manifest, when it has one
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
