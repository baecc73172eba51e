"""Make torch's DistributedDataParallel use perseus, whether torch is imported before or after perseus.

torch imports torch.nn.parallel.distributed while `import torch` is still running, so the patch only
wraps DistributedDataParallel.__init__ with a function that loads perseus.torch.ddp at the first
construction, when torch is complete. Nothing here imports torch.
"""

import functools
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Any, Optional

DDP_MODULE = "torch.nn.parallel.distributed"
_WRAPPED_MARK = "_perseus_wrapped"


class PerseusTorchMissingWarning(UserWarning):
    """torch is installed but the perseus_torch wheel is not: DDP runs without perseus."""


class DDPHookUnavailableWarning(UserWarning):
    """This torch has no DDP communication hooks (torch < 1.8): use perseus.torch.horovod instead."""


OLD_TORCH_MESSAGE = (
    "perseus: this torch ({version}) has no DistributedDataParallel.register_comm_hook (added in torch 1.8), "
    "so `import perseus` cannot accelerate DistributedDataParallel and DDP runs with torch's own allreduce. "
    "Use the Horovod API instead: `import perseus.torch.horovod as hvd`, hvd.init(), "
    "hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters()) "
    "(manual section 4.4 'PyTorch + Horovod API')."
)


def _binding_installed() -> bool:
    try:
        return importlib.util.find_spec("perseus.torch") is not None
    except (ImportError, ValueError):
        return False


def patch_ddp_class(ddp_class: Any, torch_version: str = "unknown") -> bool:
    """Wrap `ddp_class.__init__` so that each instance registers the perseus hook. Returns whether it did."""
    original = ddp_class.__init__
    if getattr(original, _WRAPPED_MARK, False):
        return True
    if not hasattr(ddp_class, "register_comm_hook"):
        warnings.warn(OLD_TORCH_MESSAGE.format(version=torch_version), DDPHookUnavailableWarning, stacklevel=3)
        return False

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        from perseus.torch import ddp  # torch is fully imported once a DDP is built

        ddp.construct(self, original, args, kwargs)

    _replace_init(ddp_class, original, __init__)
    return True


def _replace_init(ddp_class: Any, original: Any, replacement: Any) -> None:
    """Install `replacement` as `ddp_class.__init__`, marked so that it is never wrapped twice."""
    wrapped = functools.wraps(original)(replacement)
    setattr(wrapped, _WRAPPED_MARK, True)
    setattr(wrapped, "__wrapped_original__", original)
    ddp_class.__init__ = wrapped


MISSING_BINDING_MESSAGE = (
    "perseus: torch is installed but the perseus_torch wheel is not, so this DistributedDataParallel runs "
    "without perseus; install the perseus_torch wheel built for this torch, CUDA and Python "
    "(bash install_AIACC-Training.sh picks it)"
)


def warn_missing_binding_on_construct(ddp_class: Any) -> None:
    """Without the binding, DDP runs as torch's own: say so once, when a DDP model is built (a user
    of another framework who merely has torch installed hears nothing)."""
    original = ddp_class.__init__
    if getattr(original, _WRAPPED_MARK, False):
        return
    warned = []

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if not warned:
            warned.append(True)
            warnings.warn(MISSING_BINDING_MESSAGE, PerseusTorchMissingWarning, stacklevel=2)
        original(self, *args, **kwargs)

    _replace_init(ddp_class, original, __init__)


def _patch_loaded_module(module: Any) -> None:
    torch = sys.modules.get("torch")
    version = getattr(torch, "__version__", "unknown") if torch is not None else "unknown"
    ddp_class = module.DistributedDataParallel
    if hasattr(ddp_class, "register_comm_hook") and not _binding_installed():
        warn_missing_binding_on_construct(ddp_class)
    else:  # the hook path, or the loud pointer to Horovod on a torch without comm hooks
        patch_ddp_class(ddp_class, str(version))


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: Any) -> Optional[Any]:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._inner.exec_module(module)  # type: ignore[attr-defined]
        _patch_loaded_module(module)


class _DDPImportFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: lets the other finders find torch's DDP module, then wraps its loader."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != DDP_MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


_finder = _DDPImportFinder()


def install() -> None:
    """Arm the patch: now if torch's DDP module is loaded, else when it is."""
    loaded = sys.modules.get(DDP_MODULE)
    if loaded is not None and hasattr(loaded, "DistributedDataParallel"):
        _patch_loaded_module(loaded)
    elif _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
