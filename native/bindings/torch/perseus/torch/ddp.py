"""DistributedDataParallel on perseus: what `import perseus` does to every DDP model.

perseus-common wraps DistributedDataParallel.__init__ (perseus._torch_hook); the wrapper calls
`construct()` here, which:
  - unless the user chose bucket_cap_mb, sets DDP's bucket size to BUCKET_BYTES (4 MiB), so that DDP
    hands gradients to perseus while backward still runs;
  - unless the user chose gradient_as_bucket_view, makes the gradients views of DDP's buckets, which
    perseus reduces in place: no copy of every gradient out of the buckets after the last collective;
  - registers the perseus communication hook at the first forward (so that a hook the user
    registers before that replaces perseus, with a warning, instead of failing).

The hook hands each DDP bucket, in place (its data pointer: no copy for a contiguous CPU bucket; a CUDA
bucket stays on its GPU: the engine's device path, _device.py), to the native engine as one named
allreduce ("ddp<k>.b<i>");
the engine fuses the buckets agreed in one negotiation cycle, cuts large ones into 2 MiB slices, applies
the wire policy (PERSEUS_ALLREDUCE_DTYPE/_MODE, gradient scale, NaN check) and, with
PERSEUS_DOWNSAMPLE_N_ELEMENTS > 1, gossip downsampling with its residual (PERSEUS_GRADIENT_MOMENTUM).
The bucket's torch.futures.Future is completed by perseus's completion thread when the engine's handle
completes; the training thread never polls.

PERSEUS_ACCUMULATE_N_STEPS=n (framework step logic, here): the backward passes between communications
keep their local gradient (added into perseus's accumulator) and the optimizer.step() that follows such
a pass skips this model's parameters, so an unchanged training loop updates once per n passes with the
sum of the n passes' gradients, averaged over ranks.
"""

import importlib
import inspect
import itertools
import threading
import time
import warnings
import weakref
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from perseus import config as perseus_config
from perseus import engine as native
from perseus.torch import _comm, _grad_bucket, _unhonoured
from perseus.torch._comm import PerseusWorldError
from perseus.torch.perf_check import PerfCheck

BUCKET_BYTES = 4 << 20


class PerseusDDPWarning(UserWarning):
    """A DistributedDataParallel model runs without perseus (the message says why)."""


class NonFiniteGradientError(RuntimeError):
    """PERSEUS_ALLREDUCE_NANCHECK=1 found inf/NaN in the reduced gradients (the message names the parameters)."""


_STATE_ATTR = "_perseus_state"
_model_numbers = itertools.count()


class DDPState:
    """Perseus's per-model state: the engine, the model's accumulator, and what the hook needs."""

    def __init__(self, ddp: DistributedDataParallel, params: List[Tuple[str, torch.nn.Parameter]],
                 cfg: perseus_config.PerseusConfig) -> None:
        if cfg.accumulate_n_steps > 1 and not _OPTIMIZER_HOOKS:
            raise perseus_config.ConfigError(ACCUMULATE_NEEDS_HOOKS.format(n=cfg.accumulate_n_steps,
                                                                           version=torch.__version__))
        self.world = _comm.world(cfg, renew=True)
        self.cfg = cfg
        self.label = "ddp{}".format(next(_model_numbers))
        self.names = [name for name, _ in params]
        self.index_of: Dict[int, int] = {id(p): i for i, (_, p) in enumerate(params)}
        self.params = [p for _, p in params]
        self.param_ids = frozenset(self.index_of)
        self.registered = False
        self.displaced = False
        self.last_pass_local = False
        self.passes = 0
        self.accumulated: Dict[int, torch.Tensor] = {}
        self.buckets_seen: Set[int] = set()  # DDP bucket indices handed to the engine so far
        self.submissions = 0  # collectives handed to the engine (one per DDP bucket and communicating pass)
        self.last_finished_at: Optional[float] = None
        self.perf = PerfCheck(cfg, self.world, "DistributedDataParallel")
        _live_states.add(self)
        _unhonoured.report(cfg)

    @property
    def policy(self) -> str:
        return self.world.describe_policy()

    def indices_of(self, bucket: _grad_bucket.Bucket) -> List[int]:
        if bucket.parameters is not None:
            return [self.index_of[id(p)] for p in bucket.parameters]
        found = _grad_bucket.find_parameters(bucket.gradients, self.params)
        if found is None:
            raise PerseusWorldError(
                "perseus cannot tell which parameters DDP bucket {} holds: on torch {} a bucket names them only "
                "through gradients that are views into it; do not pass gradient_as_bucket_view=False to "
                "DistributedDataParallel (or use torch >= 1.10)".format(bucket.index, torch.__version__))
        return found

    def begin_pass(self) -> None:
        n = self.cfg.accumulate_n_steps
        self.last_pass_local = n > 1 and self.passes % n != n - 1
        self.passes += 1

    def accumulate(self, indices: Sequence[int], gradients: Sequence[torch.Tensor], local: bool) -> None:
        """PERSEUS_ACCUMULATE_N_STEPS: a local pass adds the bucket's gradients into the accumulator; the
        communicating pass adds the accumulator into them and starts it over. Per parameter, not per bucket:
        DDP lays its buckets out anew after the first pass."""
        for i, grad in zip(indices, gradients):
            acc = self.accumulated.get(i)
            if local:
                if acc is None:
                    self.accumulated[i] = grad.detach().clone()
                else:
                    acc.add_(grad)
            elif acc is not None:
                grad.add_(acc.view(grad.shape))
                del self.accumulated[i]

    def nonfinite_message(self, indices: Sequence[int], gradients: Sequence[torch.Tensor]) -> str:
        names = [self.names[i] for i, g in zip(indices, gradients) if not bool(torch.isfinite(g).all())]
        return ("PERSEUS_ALLREDUCE_NANCHECK: the reduced gradient of DistributedDataParallel is not finite (inf or "
                "NaN) in {} {}. A loss that grows too large can overflow fp16 after the gradient scale: lower "
                "PERSEUS_ALLREDUCE_GRADIENT_SCALE (now {:g}) or find the layer that produces it".format(
                    "parameter" if len(names) == 1 else "parameters", ", ".join(names) or "(a fused neighbour)",
                    self.world.policy["gradient_scale"]))


_live_states: "weakref.WeakSet[DDPState]" = weakref.WeakSet()


def perseus_hook(state, bucket):  # type: ignore[no-untyped-def]
    """The DDP communication hook (DDPState, dist.GradBucket) -> torch.futures.Future of the bucket
    (a list holding it before torch 1.10): hand the bucket to the engine; the future completes when it is
    reduced.

    Unannotated on purpose: DDP compares annotations with its own types, which differ across torch versions."""
    found = _grad_bucket.read(bucket)
    if found.index == 0:
        state.begin_pass()
    state.buckets_seen.add(found.index)
    buffer = found.buffer
    outcome = torch.futures.Future(devices=[buffer.device]) if buffer.is_cuda else torch.futures.Future()
    if found.is_last and state.perf.enabled:
        state.perf.local(None if state.last_finished_at is None else time.perf_counter() - state.last_finished_at)
    cfg = state.cfg
    if cfg.accumulate_n_steps > 1:
        state.accumulate(state.indices_of(found), found.gradients, state.last_pass_local)
        if state.last_pass_local:  # nothing crosses the network; the optimizer step skips these parameters
            outcome.set_result(found.result())
            return outcome
    errors: List[BaseException] = []
    engine = state.world.engine
    name = "{}.b{}".format(state.label, found.index)
    floating = buffer.is_floating_point()
    op = "average" if floating else "sum"
    staged: Optional[_comm.Staged] = None
    if cfg.downsample_n_elements > 1 and buffer.dtype == torch.float32:
        staged = _comm.Staged(buffer)  # gossip downsampling is the host path's (CUDA buckets are staged)
        handle = engine.allreduce_downsampled_async(name, _comm.buffer_of(staged.host), cfg.downsample_n_elements,
                                                    cfg.gradient_momentum, op=op)
    elif buffer.is_cuda:  # the device path: the bucket stays on the GPU until the engine compresses it
        handle = state.world.allreduce_any(name, buffer, op)
    else:
        staged = _comm.Staged(buffer)
        handle = engine.allreduce_async(name, _comm.buffer_of(staged.host), op=op)

    def done(error: Optional[BaseException]) -> None:
        if staged is not None:
            staged.finish()
        if isinstance(error, native.NonFiniteError):
            error = NonFiniteGradientError(state.nonfinite_message(state.indices_of(found), found.gradients))
        if error is not None:
            errors.append(error)
        state.last_finished_at = time.perf_counter()
        outcome.set_result(found.result())

    def result(_: Any) -> Any:
        if errors:  # raised inside then(): DDP's backward re-raises it with this message
            raise errors[0]
        return found.result()

    state.submissions += 1
    state.world.completions.add(handle, done)
    return outcome.then(result)


def _ddp_parameters(module: torch.nn.Module) -> List[Tuple[str, torch.nn.Parameter]]:
    """The parameters DDP reduces, in the order backward produces their gradients (reverse registration)."""
    ignored = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()) or ())
    params = [(name, p) for name, p in module.named_parameters() if p.requires_grad and name not in ignored]
    return list(reversed(params))


def _bound(original_init: Any, ddp: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    try:
        return dict(inspect.signature(original_init).bind(ddp, *args, **kwargs).arguments)
    except TypeError:
        return {}


def construct(ddp: DistributedDataParallel, original_init: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> None:
    """DistributedDataParallel.__init__ under perseus."""
    _patch_class_once()
    cfg = perseus_config.get()
    bound = _bound(original_init, ddp, args, kwargs)
    module = bound.get("module")
    group = bound.get("process_group")
    usable = module is not None and dist.is_initialized() and (group is None or group is _default_group())
    params = _ddp_parameters(module) if usable else []
    accepted = inspect.signature(original_init).parameters
    if usable and bound.get("bucket_cap_mb") is None and "bucket_cap_mb" in accepted:
        kwargs = dict(kwargs)
        kwargs["bucket_cap_mb"] = BUCKET_BYTES / float(1024 * 1024)
    if usable and "gradient_as_bucket_view" not in bound and "gradient_as_bucket_view" in accepted:
        kwargs = dict(kwargs)
        kwargs["gradient_as_bucket_view"] = True
    original_init(ddp, *args, **kwargs)
    if module is None:
        return
    if not usable:
        warnings.warn("perseus: this DistributedDataParallel model runs on a process group other than the default one; "
                      "perseus accelerates DDP on the default process group only, so this model uses torch's own "
                      "allreduce", PerseusDDPWarning, stacklevel=3)
        return
    setattr(ddp, _STATE_ATTR, DDPState(ddp, params, cfg))


def _default_group() -> Any:
    return dist.distributed_c10d._get_default_group()


def state_of(ddp: DistributedDataParallel) -> Optional[DDPState]:
    return getattr(ddp, _STATE_ATTR, None)


def _ensure_registered(ddp: DistributedDataParallel) -> None:
    state = state_of(ddp)
    if state is None or state.registered or state.displaced:
        return
    state.registered = True
    _ORIGINAL["register_comm_hook"](ddp, state, perseus_hook)


_ORIGINAL: Dict[str, Any] = {}
_OPTIMIZER_HOOKS: List[Any] = []
_patch_lock = threading.Lock()


def _patch_class_once() -> None:
    with _patch_lock:
        if _ORIGINAL:
            return
        cls = DistributedDataParallel
        _ORIGINAL["forward"] = cls.forward
        _ORIGINAL["register_comm_hook"] = cls.register_comm_hook
        _ORIGINAL["_register_builtin_comm_hook"] = cls._register_builtin_comm_hook

        def forward(self: DistributedDataParallel, *inputs: Any, **kwargs: Any) -> Any:
            _ensure_registered(self)
            return _ORIGINAL["forward"](self, *inputs, **kwargs)

        def displace(self: DistributedDataParallel, what: str) -> None:
            state = state_of(self)
            if state is not None and not state.registered:
                state.displaced = True
                warnings.warn("perseus: {} replaces the perseus communication hook of this DistributedDataParallel "
                              "model (DDP takes one hook per model)".format(what), PerseusDDPWarning, stacklevel=3)

        def register_comm_hook(self: DistributedDataParallel, state: Any, hook: Any) -> None:
            displace(self, "your register_comm_hook({})".format(getattr(hook, "__qualname__", hook)))
            return _ORIGINAL["register_comm_hook"](self, state, hook)

        def _register_builtin_comm_hook(self: DistributedDataParallel, comm_hook_type: Any) -> None:
            displace(self, "the built-in hook {}".format(comm_hook_type))
            return _ORIGINAL["_register_builtin_comm_hook"](self, comm_hook_type)

        cls.forward = forward
        cls.register_comm_hook = register_comm_hook
        cls._register_builtin_comm_hook = _register_builtin_comm_hook
        _install_optimizer_hooks()


# ---- PERSEUS_ACCUMULATE_N_STEPS: optimizer steps after a local pass skip the model's parameters ----

def _optimizer_pre_hook(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    hidden = []
    local_ids = set()
    for state in list(_live_states):
        if state.last_pass_local:
            local_ids |= state.param_ids
    if not local_ids:
        return
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) in local_ids and p.grad is not None:
                hidden.append((p, p.grad))
                p.grad = None
    optimizer.__dict__["_perseus_hidden_grads"] = hidden


def _optimizer_post_hook(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    for p, grad in optimizer.__dict__.pop("_perseus_hidden_grads", []):
        p.grad = grad


ACCUMULATE_NEEDS_HOOKS = (
    "PERSEUS_ACCUMULATE_N_STEPS={n} cannot work under DistributedDataParallel on torch {version}: perseus skips the "
    "optimizer step after each local pass through torch's global optimizer step hooks, which arrived in torch 2.0. "
    "Unset PERSEUS_ACCUMULATE_N_STEPS and accumulate with DDP's no_sync(), use hvd.DistributedOptimizer "
    "(which applies the variable on every torch), or upgrade torch to 2.0 or newer")


def _install_optimizer_hooks() -> None:
    optimizer_module = importlib.import_module("torch.optim.optimizer")
    register_pre = getattr(optimizer_module, "register_optimizer_step_pre_hook", None)
    register_post = getattr(optimizer_module, "register_optimizer_step_post_hook", None)
    if register_pre is None or register_post is None:
        return  # DDPState refuses PERSEUS_ACCUMULATE_N_STEPS > 1 (ACCUMULATE_NEEDS_HOOKS)
    _OPTIMIZER_HOOKS.append(register_pre(_optimizer_pre_hook))
    _OPTIMIZER_HOOKS.append(register_post(_optimizer_post_hook))
