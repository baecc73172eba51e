"""Per-step gradient reduction of hvd.DistributedOptimizer on the engine.

Each gradient is one named allreduce ("<label>.<parameter name>"), submitted in place as autograd
produces it (the engine fuses those agreed in one negotiation cycle and applies the wire policy);
wait() waits for the step's handles. Framework step logic stays here: PERSEUS_ACCUMULATE_N_STEPS (a
local step adds the gradients into an accumulator, nothing is sent), Horovod's compression=fp16 when
the engine's wire is not fp16 already (scaled fp16 tensors on the wire), gradient_predivide_factor.
Gossip downsampling (PERSEUS_DOWNSAMPLE_N_ELEMENTS) is the engine's.
"""

import threading
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import torch

from perseus import config as perseus_config
from perseus import engine as native
from perseus.torch import _comm


class NonFiniteGradientError(RuntimeError):
    """PERSEUS_ALLREDUCE_NANCHECK=1 found inf/NaN in the reduced gradients (the message names the parameters)."""


class GradientReducer:
    def __init__(self, world: _comm.World, label: str, names: Sequence[str], cfg: perseus_config.PerseusConfig,
                 average: bool, force_fp16: bool, predivide: float = 1.0) -> None:
        self.world = world
        self.label = label
        self.names = list(names)
        self.cfg = cfg
        self.average = average
        self.fp16_by_shim = force_fp16 and not (world.intra_fp16 and world.inter_fp16)
        self.predivide = predivide
        self.scale = float(world.policy["gradient_scale"])
        self.steps_started = 0
        self.communicate = True
        self.reported_now: Set[int] = set()
        self.pending: List[Tuple[int, Any, torch.Tensor, Optional[_comm.Staged], Optional[torch.Tensor]]] = []
        self.accumulated: Dict[int, torch.Tensor] = {}
        self._lock = threading.Lock()

    @property
    def next_step_communicates(self) -> bool:
        n = self.cfg.accumulate_n_steps
        return self.steps_started % n == n - 1

    def begin_step(self, force_communicate: bool = False) -> bool:
        n = self.cfg.accumulate_n_steps
        self.communicate = force_communicate or self.steps_started % n == n - 1
        self.steps_started += 1
        self.reported_now = set()
        self.pending = []
        return self.communicate

    def reported(self, index: int) -> bool:
        return index in self.reported_now

    @property
    def busy(self) -> bool:
        return bool(self.reported_now)

    def ready(self, index: int, grad: torch.Tensor) -> None:
        if index in self.reported_now:
            raise RuntimeError("perseus: gradient '{}' was reported twice in one step".format(self.names[index]))
        self.reported_now.add(index)
        if self.cfg.accumulate_n_steps > 1:
            acc = self.accumulated.get(index)
            if not self.communicate:
                if acc is None:
                    self.accumulated[index] = grad.detach().clone()
                else:
                    acc.add_(grad)
                return
            if acc is not None:
                grad.add_(acc)
                del self.accumulated[index]
        if self.predivide != 1.0:
            grad.div_(self.predivide)
        name = "{}.{}".format(self.label, self.names[index])
        wire: Optional[torch.Tensor] = None
        staged: Optional[_comm.Staged] = None
        op = "average" if self.average and grad.is_floating_point() else "sum"
        n = self.cfg.downsample_n_elements
        if self.fp16_by_shim and grad.dtype == torch.float32:
            if grad.is_cuda:  # scaled fp16 on the device; the engine's device path sums it
                wire = (grad.detach() * self.scale).half()
                handle = self.world.allreduce_any(name, wire, "sum")
            else:
                wire = (grad.detach().to("cpu") * self.scale).half()
                staged = _comm.Staged(wire)
                handle = self.world.engine.allreduce_async(name, _comm.buffer_of(staged.host), op="sum")
        elif grad.is_cuda and not (n > 1 and grad.dtype == torch.float32):
            if not grad.is_contiguous():
                wire = grad.detach().contiguous()  # reduced in this copy, copied back by wait()
            handle = self.world.allreduce_any(name, grad if wire is None else wire, op)
        else:  # host tensors, and gossip downsampling (the host path's: CUDA gradients are staged)
            staged = _comm.Staged(grad)
            if n > 1 and grad.dtype == torch.float32:
                handle = self.world.engine.allreduce_downsampled_async(
                    name, _comm.buffer_of(staged.host), n, self.cfg.gradient_momentum, op=op)
            else:
                handle = self.world.engine.allreduce_async(name, _comm.buffer_of(staged.host), op=op)
        with self._lock:
            self.pending.append((index, handle, grad, staged, wire))

    def wait(self) -> None:
        """Wait for every gradient of this step; raise the first error (a non-finite one names the parameters)."""
        first: Optional[BaseException] = None
        nonfinite: List[str] = []
        with self._lock:
            pending, self.pending = self.pending, []
        for index, handle, grad, staged, wire in pending:
            flagged = False
            try:
                handle.wait()
            except native.NonFiniteError:
                flagged = True  # the engine flags a whole fused group: name the gradients that are not finite
            except native.EngineError as error:
                first = first or error
            if staged is not None:
                staged.finish()
            if wire is not None and wire.dtype != grad.dtype:  # Horovod's fp16 compression by the shim
                divisor = self.scale * (self.world.size if self.average else 1)
                grad.copy_((wire.float() / divisor).view(grad.shape))
            elif wire is not None:
                grad.copy_(wire.view(grad.shape))
            if self.predivide != 1.0:
                grad.mul_(self.predivide)
            if flagged and not bool(torch.isfinite(grad).all()):
                nonfinite.append(self.names[index])
        if first is not None:
            raise first
        if nonfinite:
            raise NonFiniteGradientError(
                "PERSEUS_ALLREDUCE_NANCHECK: the reduced gradient of DistributedOptimizer is not finite (inf or NaN) "
                "in {} {}. A loss that grows too large can overflow fp16 after the gradient scale: lower "
                "PERSEUS_ALLREDUCE_GRADIENT_SCALE (now {:g}) or find the layer that produces it".format(
                    "parameter" if len(nonfinite) == 1 else "parameters", ", ".join(nonfinite), self.scale))
