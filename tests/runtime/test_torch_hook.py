"""`import perseus` arms the DDP patch without importing torch; old torch gets a loud pointer to Horovod."""

import subprocess
import sys
import warnings

import pytest

from perseus import _torch_hook
from perseus_harness import python_path


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


def test_missing_binding_beside_torch_is_reported(monkeypatch):
    monkeypatch.setattr(_torch_hook, "_binding_installed", lambda: False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _torch_hook.install()
    assert any(issubclass(w.category, _torch_hook.PerseusTorchMissingWarning) for w in caught)
