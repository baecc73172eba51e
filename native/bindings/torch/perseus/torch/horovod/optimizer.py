"""hvd.DistributedOptimizer: the wrapped optimizer steps on gradients averaged over all ranks by perseus.

Gradients are handed to perseus's native engine (perseus.torch._gradients) as autograd produces them,
one named allreduce each, fused by the engine (PERSEUS_ALLREDUCE_FUSION) and reduced while backward goes
on; step() waits for them. The wire format comes from `compression=` and PERSEUS_ALLREDUCE_DTYPE together:

  compression \\ PERSEUS_ALLREDUCE_DTYPE   0 (default)      1                 2
  Compression.none (Horovod's default)   fp16 everywhere  fp32 everywhere   fp32 in node, fp16 between
  Compression.fp16                       fp16 everywhere  fp16 everywhere   fp16 everywhere

i.e. a level carries fp16 when either asks for it: PERSEUS_ALLREDUCE_DTYPE=1 turns off only the
compression perseus adds by default, never the one the code asks for. fp16 always uses perseus's
scaled compression (PERSEUS_ALLREDUCE_GRADIENT_SCALE): the engine's, or scaled fp16 tensors handed to the
engine when its wire policy sends fp32. A custom Compressor is not supported by the
fused path (it raises). hvd.allreduce() itself applies exactly the `compression=` it is given.

backward_passes_per_step=k (Horovod): k backward passes per step(); autograd sums them; one
allreduce per step. PERSEUS_ACCUMULATE_N_STEPS=n: only every n-th step() communicates and updates;
the other step() calls only add the gradients to perseus's accumulator (so an unchanged loop with
zero_grad() every iteration updates with the sum of n steps' gradients, averaged over ranks).
"""

import contextlib
import hashlib
import itertools
import time
import warnings
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from perseus import config as perseus_config
from perseus.torch import _comm, _gradients, _unhonoured
from perseus.horovod_kit.process_sets import ProcessSet, global_process_set, is_global, member_set
from perseus.torch.horovod import basics
from perseus.torch.horovod import collectives as C
from perseus.torch.horovod.compression import Compression, FP16Compressor, NoneCompressor
from perseus.torch.perf_check import PerfCheck


def _named(optimizer_groups: Sequence[Dict[str, Any]], named_parameters: Optional[Any]) -> List[Tuple[str, torch.Tensor]]:
    all_params = [p for group in optimizer_groups for p in group["params"]]
    if named_parameters is None:
        return [("allreduce.noname.{}".format(i), p) for i, p in enumerate(all_params)]
    named = list(named_parameters)
    if any(not isinstance(item, tuple) or len(item) != 2 for item in named):
        raise ValueError("named_parameters should be a sequence of (name, parameter) tuples, "
                         "usually model.named_parameters()")
    names = [n for n, _ in named]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError("parameter names in named_parameters must be unique; found duplicates: {}".format(
            ", ".join(duplicates)))
    known = {id(p) for _, p in named}
    unnamed = [i for i, p in enumerate(all_params) if id(p) not in known]
    if unnamed:
        raise ValueError("named_parameters was specified, but {} of the optimizer's parameters were not named "
                         "(positions {}); with several models, merge their named_parameters (manual 4.4)".format(
                             len(unnamed), unnamed[:10]))
    optimized = {id(p) for p in all_params}
    return [(n, p) for n, p in named if id(p) in optimized]


def _force_fp16(compression: Any) -> bool:
    if compression is None or compression is Compression.none or compression is NoneCompressor:
        return False
    if compression is Compression.fp16 or compression is FP16Compressor:
        return True
    raise ValueError("not supported: compression={!r} in hvd.DistributedOptimizer; perseus fuses and compresses "
                     "gradients itself: use hvd.Compression.none (PERSEUS_ALLREDUCE_DTYPE decides) or "
                     "hvd.Compression.fp16".format(compression))


_optimizer_numbers = itertools.count()


class _DistributedOptimizer(torch.optim.Optimizer):
    """Methods mixed into a subclass of the wrapped optimizer's class (as Horovod does)."""

    def __init__(self, params: Any, named_parameters: Any, compression: Any, backward_passes_per_step: int,
                 op: int, gradient_predivide_factor: float, groups_requested: bool, sparse_as_dense: bool,
                 process_set: Any) -> None:
        super(self.__class__, self).__init__(params)
        cfg = perseus_config.get()
        basics.world()  # hvd.init() first
        set_world = _set_world(process_set)
        # a rank outside the optimizer's process set steps on its own gradients, as Horovod's does
        self._perseus_local = set_world is False
        world = _comm.world(cfg, renew=True) if set_world is None or set_world is False else set_world
        self._perseus_world = None if set_world is None or set_world is False else set_world
        self._perseus_process_set = process_set
        self._perseus_unbound = False  # after an elastic reset, until the set is looked up again (_perseus_rebind)
        _unhonoured.report(cfg)
        if op not in (C.Average, C.Sum, C.Adasum):
            raise ValueError("DistributedOptimizer(op=...) takes hvd.Average, hvd.Sum or hvd.Adasum")
        if gradient_predivide_factor != 1.0 and op != C.Average:
            raise ValueError("gradient_predivide_factor != 1.0 needs op=hvd.Average")
        if backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be >= 1, got {}".format(backward_passes_per_step))
        if groups_requested:
            warnings.warn("hvd.DistributedOptimizer: groups/num_groups are replaced by perseus's fusion plan "
                          "(PERSEUS_ALLREDUCE_FUSION); the argument has no effect", UserWarning, stacklevel=3)
        every_named = _named(self.param_groups, named_parameters)
        self._parameter_names = {p: n for n, p in every_named}  # Horovod's attribute: parameter -> name
        named = [(n, p) for n, p in every_named if p.requires_grad]
        self._perseus_named = list(reversed(named))  # backward produces the last layers' gradients first
        self._perseus_index = {id(p): i for i, (_, p) in enumerate(self._perseus_named)}
        self._perseus_op = op
        self._perseus_sparse_as_dense = sparse_as_dense
        self._perseus_sparse_grads: Dict[int, torch.Tensor] = {}  # index -> sparse gradient, reduced in synchronize()
        self._perseus_back_to_sparse: Dict[int, bool] = {}  # sparse_as_dense: made sparse again before the update
        self.backward_passes_per_step = backward_passes_per_step
        self._perseus_passes = [0] * len(self._perseus_named)
        self._perseus_synchronized = False
        self._perseus_should_synchronize = True
        self._perseus_label = "opt{}".format(next(_optimizer_numbers))
        self._perseus_compression, self._perseus_predivide = compression, gradient_predivide_factor
        self._perseus_engine = _gradients.GradientReducer(
            world, self._perseus_label, [n for n, _ in self._perseus_named], cfg,
            average=op != C.Sum, force_fp16=_force_fp16(compression), predivide=gradient_predivide_factor)
        self._perseus_digest = _plan_digest(self._perseus_named, world.policy, _force_fp16(compression))
        self._perseus_perf = PerfCheck(cfg, world, "DistributedOptimizer")
        self._perseus_engine.begin_step()
        if self._perseus_world is None:  # hvd.join() takes part in the job's steps only
            C.register_step_participant(self._perseus_digest, self._perseus_zero_step)
        self._perseus_hooks = [] if self._perseus_local else \
            [self._perseus_hook_param(i, p) for i, (_, p) in enumerate(self._perseus_named)]

    # ---- gradient hooks ---------------------------------------------------------------------------
    def _perseus_hook_param(self, index: int, param: torch.Tensor) -> Any:
        def on_grad(*_: Any) -> None:
            self._perseus_grad_ready(index, param)

        if hasattr(param, "register_post_accumulate_grad_hook"):
            return param.register_post_accumulate_grad_hook(on_grad)
        accumulator = param.expand_as(param).grad_fn.next_functions[0][0]
        accumulator.register_hook(on_grad)
        return accumulator  # keeps the accumulator (and its hook) alive

    def _perseus_grad_ready(self, index: int, param: torch.Tensor) -> None:
        if self._perseus_unbound:
            self._perseus_bind_set()
        if self._perseus_op == C.Adasum or self._perseus_local:
            return  # Adasum reduces per parameter in synchronize(); a rank outside the set keeps its gradients
        self._perseus_passes[index] += 1
        if self._perseus_passes[index] > self.backward_passes_per_step:
            raise AssertionError(
                "gradient of '{}' computed more than backward_passes_per_step={} times before step(); call step() "
                "or synchronize() after backward_passes_per_step passes, or raise it".format(
                    self._perseus_named[index][0], self.backward_passes_per_step))
        if self._perseus_passes[index] == self.backward_passes_per_step:
            self._perseus_engine.ready(index, self._perseus_dense_grad(index, param))

    def _perseus_dense_grad(self, index: int, param: torch.Tensor) -> torch.Tensor:
        grad = param.grad
        if grad.is_sparse:
            if not self._perseus_sparse_as_dense:
                # Horovod's sparse allreduce (an allgather of indices and values) in synchronize(); the fused
                # dense plan carries zeros in its place
                self._perseus_sparse_grads[index] = grad
                return torch.zeros(param.shape, dtype=param.dtype, device=param.device)
            self._perseus_back_to_sparse[index] = True
            grad = grad.to_dense()
            param.grad = grad
        if not grad.is_contiguous():
            grad = grad.contiguous()
            param.grad = grad
        return grad

    # ---- Horovod API ---------------------------------------------------------------------------------
    def set_backward_passes_per_step(self, passes: int) -> None:
        if passes < 1:
            raise ValueError("backward_passes_per_step must be >= 1, got {}".format(passes))
        self.backward_passes_per_step = passes

    def synchronize(self) -> None:
        """Wait until every gradient is averaged over all ranks (missing ones count as zeros)."""
        if self._perseus_unbound:
            self._perseus_bind_set()
        if self._perseus_synchronized:
            return
        if self._perseus_local:
            self._perseus_synchronized = True
            return
        with _comm.using(self._perseus_world):  # the process set's world (None: the job's)
            self._perseus_synchronize()
        self._perseus_synchronized = True

    def _perseus_synchronize(self) -> None:
        engine = self._perseus_engine
        self._perseus_perf.local(self._perseus_local_seconds())
        if self._perseus_op == C.Adasum:
            self._perseus_adasum()
        else:
            for i, (_, p) in enumerate(self._perseus_named):
                if not engine.reported(i):
                    if p.grad is None:
                        p.grad = torch.zeros_like(p)
                    engine.ready(i, self._perseus_dense_grad(i, p))
            if engine.communicate:
                C.announce_step(self._perseus_digest, "DistributedOptimizer")
            engine.wait()
            self._perseus_sparse_step()
            self._perseus_finished_at = time.perf_counter()

    def _perseus_sparse_step(self) -> None:
        """Sparse gradients as Horovod reduces them (sparse_as_dense=False), in parameter order on every rank;
        sparse_as_dense=True ones become sparse again before the update."""
        sparse, self._perseus_sparse_grads = self._perseus_sparse_grads, {}
        for index in sorted(sparse):
            name, param = self._perseus_named[index]
            op = C.Sum if self._perseus_op == C.Sum else C.Average
            param.grad = C.sparse_allreduce_async(sparse[index], name="sparse." + name, op=op)()
        back, self._perseus_back_to_sparse = self._perseus_back_to_sparse, {}
        for index in sorted(back):
            param = self._perseus_named[index][1]
            if param.grad is not None and not param.grad.is_sparse:
                param.grad = param.grad.to_sparse()

    def _perseus_local_seconds(self) -> Optional[float]:
        at = getattr(self, "_perseus_finished_at", None)
        return None if at is None else time.perf_counter() - at

    def _perseus_adasum(self) -> None:
        for name, p in self._perseus_named:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            p.grad.copy_(C.allreduce(p.grad, op=C.Adasum, name="adasum." + name))

    def _perseus_zero_step(self) -> None:
        """A joined rank's part in the others' step: zeros in, result dropped."""
        engine = self._perseus_engine
        engine.begin_step(force_communicate=True)
        for i, (_, p) in enumerate(self._perseus_named):
            engine.ready(i, torch.zeros_like(p))
        engine.wait()
        engine.begin_step()

    @contextlib.contextmanager
    def skip_synchronize(self) -> Iterator[None]:
        """Inside: step() does not synchronize (call synchronize() yourself before, e.g. to clip gradients)."""
        self._perseus_should_synchronize = False
        try:
            yield
        finally:
            self._perseus_should_synchronize = True

    def step(self, closure: Any = None) -> Any:
        if self._perseus_should_synchronize:
            if self._perseus_synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() after "
                              "optimizer.synchronize(); this can cause training slowdown", UserWarning, stacklevel=2)
            self.synchronize()
        communicated = self._perseus_local or self._perseus_op == C.Adasum or self._perseus_engine.communicate
        self._perseus_next_step()
        if not communicated:
            return None  # PERSEUS_ACCUMULATE_N_STEPS: a local step, the update waits for the n-th
        return super(self.__class__, self).step(closure) if closure is not None else super(self.__class__, self).step()

    def _perseus_next_step(self) -> None:
        self._perseus_passes = [0] * len(self._perseus_named)
        self._perseus_synchronized = False
        if self._perseus_op != C.Adasum:  # Adasum does not use the engine
            self._perseus_engine.begin_step()

    def _perseus_rebind(self) -> None:
        """After an elastic reset (hvd.elastic.run): reduce over the job's new engine, under the same label (a new
        worker's optimizer, made after its hvd.init(), has it too), and drop a step the lost rank interrupted. An
        optimizer over a process set binds at its next use instead (_perseus_bind_set): the reset closed the set,
        and the state's reset callbacks, which run after this, may register it again."""
        if not is_global(self._perseus_process_set):
            self._perseus_unbound = True
            return
        self._perseus_bind(_comm.world(perseus_config.get()))

    def _perseus_bind_set(self) -> None:
        """The first use of an optimizer over a process set after an elastic reset: the set as registered now (the
        same ProcessSet registered again, with hvd.add_process_set on every rank), or the ValueError that names the
        reset while it is not. A rank outside the set now keeps its own gradients."""
        set_world = _set_world(self._perseus_process_set)
        self._perseus_local = set_world is False
        self._perseus_world = None if set_world is False else set_world
        self._perseus_unbound = False
        if not self._perseus_local and not self._perseus_hooks:  # outside the set before the reset, a member now
            self._perseus_hooks = [self._perseus_hook_param(i, p) for i, (_, p) in enumerate(self._perseus_named)]
        self._perseus_bind(_comm.world(perseus_config.get()) if self._perseus_local else set_world)

    def _perseus_bind(self, world: Any) -> None:
        cfg = perseus_config.get()
        self._perseus_engine = _gradients.GradientReducer(
            world, self._perseus_label, [n for n, _ in self._perseus_named], cfg, average=self._perseus_op != C.Sum,
            force_fp16=_force_fp16(self._perseus_compression), predivide=self._perseus_predivide)
        self._perseus_perf = PerfCheck(cfg, world, "DistributedOptimizer")
        self._perseus_sparse_grads.clear()
        self._perseus_next_step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        if self._perseus_unbound:
            self._perseus_bind_set()
        if self._perseus_engine.busy and not self._perseus_synchronized:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before optimizer.step() "
                                 "or optimizer.synchronize(); this is prohibited as it can cause a race condition")
        return super(self.__class__, self).zero_grad(set_to_none)


def _plan_digest(named: Sequence[Tuple[str, torch.Tensor]], policy: Any, force_fp16: bool) -> int:
    text = "{}|{}|{}".format(policy, force_fp16, ";".join("{}:{}:{}".format(n, p.numel(), p.dtype) for n, p in named))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def DistributedOptimizer(optimizer: torch.optim.Optimizer, named_parameters: Any = None,
                         compression: Any = Compression.none, backward_passes_per_step: int = 1, op: int = C.Average,
                         gradient_predivide_factor: float = 1.0, num_groups: int = 0, groups: Any = None,
                         sparse_as_dense: bool = False, process_set: Any = global_process_set) -> torch.optim.Optimizer:
    """Wrap `optimizer` so that step() uses gradients averaged (op) over the ranks of `process_set` (every rank by
    default; Horovod's signature). A rank outside the set steps on its own gradients."""
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
               gradient_predivide_factor, bool(num_groups) or groups is not None, sparse_as_dense, process_set)


def _set_world(process_set: Any) -> Any:
    """None for the global set; False when this rank is not in the (registered) set; else the set's world."""
    if is_global(process_set):
        return None
    if isinstance(process_set, ProcessSet) and process_set.process_set_id is not None and not process_set.included():
        return False
    member = member_set(process_set, "hvd.DistributedOptimizer")  # ValueError for an unregistered set
    return member.handle
