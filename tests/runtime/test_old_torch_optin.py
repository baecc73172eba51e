"""`import perseus` beside a real torch 1.7.1 (the 1.5.0 release covers torch 1.2-1.7, which have no DDP
communication hooks). Opt-in (AIACC_OPTIN=1): it downloads torch 1.7.1 for Python 3.8 from PyPI
(~780 MB, once into pip's cache) and takes ~2 min."""

import glob
import subprocess

import pytest

from perseus_harness import REPO_ROOT

pytestmark = pytest.mark.optin

SCRIPT = r"""
import os, warnings
warnings.simplefilter("always")
import perseus
from perseus import _torch_hook
import torch, torch.distributed as dist
ddp = torch.nn.parallel.DistributedDataParallel
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    patched = _torch_hook.patch_ddp_class(ddp, torch.__version__)
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29561")
dist.init_process_group("gloo", rank=0, world_size=1)
model = ddp(torch.nn.Linear(4, 2))
model(torch.ones(3, 4)).sum().backward()
print("patched", patched)
print("warnings", [(w.category.__name__, str(w.message)) for w in caught])
print("grad", float(model.module.weight.grad.sum()))
"""


def test_torch_1_7_ddp_runs_unchanged_with_a_loud_pointer_to_horovod(tmp_path):
    found = sorted(glob.glob("/root/.pyenv/versions/3.8.*/bin/python3.8"))
    if not found:
        pytest.skip("no Python 3.8 under pyenv")
    venv = tmp_path / "venv"
    subprocess.run([found[-1], "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "-q"]
    subprocess.run(pip + ["torch==1.7.1", str(REPO_ROOT / "native" / "runtime")], check=True, timeout=1200)
    done = subprocess.run([str(venv / "bin/python"), "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "patched False" in done.stdout
    assert "DDPHookUnavailableWarning" in done.stdout and "torch (1.7.1)" in done.stdout
    assert "import perseus.torch.horovod as hvd" in done.stdout
    assert "grad 24.0" in done.stdout  # DDP itself still trains, with torch's own allreduce
