"""`import perseus` arms the DDP patch without importing torch; old torch gets a loud pointer to Horovod."""

import subprocess
import sys
from pathlib import Path

import pytest

from aiacc_build.wheels.cache import DEFAULT_CACHE_DIR, BuildCache
from aiacc_build.wheels.envs import create_venv, install
from aiacc_build.wheels.toolchain import find_interpreter
from perseus import _torch_hook
from perseus_harness import REPO_ROOT, free_port, python_path

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

LOCAL_TORCH = "/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"


def run_python(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": python_path(), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_import_perseus_does_not_import_torch_and_patches_ddp_when_torch_loads():
    out = run_python("import sys, perseus; print('torch' in sys.modules); "
                     "from torch.nn.parallel import DistributedDataParallel as D; "
                     "print(getattr(D.__init__, '_perseus_wrapped', False))")
    assert out.splitlines() == ["False", "True"]


def test_import_perseus_after_torch_patches_ddp_at_once():
    out = run_python("import torch; from torch.nn.parallel import DistributedDataParallel as D; "
                     "print(getattr(D.__init__, '_perseus_wrapped', False)); import perseus; "
                     "print(getattr(D.__init__, '_perseus_wrapped', False))")
    assert out.splitlines() == ["False", "True"]


class _OldDDP(object):
    """Stands for DistributedDataParallel of torch 1.2-1.7: no register_comm_hook."""

    def __init__(self, module):
        self.module = module


class _NewDDP(_OldDDP):
    def register_comm_hook(self, state, hook):
        pass


def test_torch_without_comm_hooks_gets_a_loud_warning_pointing_to_horovod():
    with pytest.warns(_torch_hook.DDPHookUnavailableWarning) as caught:
        assert not _torch_hook.patch_ddp_class(_OldDDP, "1.7.1")
    message = str(caught[0].message)
    assert "torch (1.7.1)" in message and "import perseus.torch.horovod as hvd" in message
    assert not hasattr(_OldDDP.__init__, "_perseus_wrapped")


def test_patch_is_applied_once():
    assert _torch_hook.patch_ddp_class(_NewDDP, "2.13.0")
    wrapped = _NewDDP.__init__
    assert _torch_hook.patch_ddp_class(_NewDDP, "2.13.0")
    assert _NewDDP.__init__ is wrapped and wrapped._perseus_wrapped


MISSING_BINDING_RUN = (
    "import os, warnings; warnings.simplefilter('always')\n"
    "import perseus, torch, torch.distributed as dist\n"
    "print('imported')\n"
    "os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=os.environ['PORT'])\n"
    "dist.init_process_group('gloo', rank=0, world_size=1)\n"
    "for _ in range(2):\n"
    "    m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))\n"
    "m(torch.ones(3, 4)).sum().backward()\n"
    "print('grad', float(m.module.weight.grad.sum()))\n"
)


def test_missing_binding_is_reported_once_when_a_ddp_is_built(tmp_path):
    """perseus-common without perseus_torch (a fresh venv holding torch alone): silent at import (a
    TensorFlow user may have torch installed), one warning at the first DDP, DDP trains as torch's own."""
    if not Path(LOCAL_TORCH).is_file():
        pytest.skip(LOCAL_TORCH + " is not on this disk")
    cache = BuildCache(DEFAULT_CACHE_DIR)
    venv = create_venv(tmp_path / "venv", find_interpreter("3.11"), cache)
    install(venv, [LOCAL_TORCH], cache)
    runtime_only = str(REPO_ROOT / "native" / "runtime")
    done = subprocess.run([str(venv.python), "-c", MISSING_BINDING_RUN], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": runtime_only, "PATH": "/usr/bin:/bin", "PORT": str(free_port())})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == "imported" and "grad 24.0" in done.stdout
    warned = [line for line in done.stderr.splitlines() if "PerseusTorchMissingWarning" in line]
    assert len(warned) == 1 and "this DistributedDataParallel runs without perseus" in warned[0], done.stderr
