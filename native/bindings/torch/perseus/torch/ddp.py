"""DistributedDataParallel on perseus: what `import perseus` does to every DDP model.

perseus-common wraps DistributedDataParallel.__init__ (perseus._torch_hook); the wrapper calls
`construct()` here, which:
  - plans the fusion groups over the model's gradients (reverse parameter order, as backward
    produces them) and, unless the user chose bucket_cap_mb, sets DDP's bucket size to the smallest
    group, so that DDP hands gradients to perseus as soon as they are ready;
  - unless the user chose gradient_as_bucket_view, makes the gradients views of DDP's buckets, which
    perseus reduces in place: no copy of every gradient out of the buckets after the last collective,
    on the critical path of every step;
  - registers the perseus communication hook at the first forward (so that a hook the user
    registers before that replaces perseus, with a warning, instead of failing).

Mapping of buckets: DDP buckets only decide WHEN gradients reach perseus. The hook marks the
bucket's gradients ready in the engine; the engine runs one collective per fusion group of the
native plan (PERSEUS_ALLREDUCE_FUSION), not per DDP bucket. The future of a DDP bucket completes when
every fusion group holding one of its gradients is reduced.

PERSEUS_ACCUMULATE_N_STEPS=n: the backward passes between communications keep their local
gradient (added into perseus's accumulator) and the optimizer.step() that follows such a pass skips
this model's parameters, so an unchanged training loop updates once per n passes with the sum of
the n passes' gradients, averaged over ranks.
"""

import importlib
import inspect
import threading
import warnings
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from perseus import config as perseus_config
from perseus.torch import _engine, _grad_bucket, _world
from perseus.torch._world import PerseusWorldError
from perseus.torch.perf_check import PerfCheck


class PerseusDDPWarning(UserWarning):
    """A DistributedDataParallel model runs without perseus (the message says why)."""


_STATE_ATTR = "_perseus_state"


class DDPState:
    """Perseus's per-model state: the engine and what the hook needs to map DDP buckets onto it."""

    def __init__(self, ddp: DistributedDataParallel, params: List[Tuple[str, torch.nn.Parameter]],
                 cfg: perseus_config.PerseusConfig) -> None:
        if cfg.accumulate_n_steps > 1 and not _OPTIMIZER_HOOKS:
            raise perseus_config.ConfigError(ACCUMULATE_NEEDS_HOOKS.format(n=cfg.accumulate_n_steps,
                                                                           version=torch.__version__))
        world = _world.world(cfg)
        topology = world.topology
        self.cfg = cfg
        self.world = world
        self.names = [name for name, _ in params]
        entries = [_engine.Entry(name, p.numel(), p.dtype, p.device) for name, p in params]
        policy = _engine.wire_policy(cfg, topology.num_nodes, topology.local_size)
        self.engine = _engine.Engine(entries, world, cfg, policy, label="DistributedDataParallel")
        self.index_of: Dict[int, int] = {id(p): i for i, (_, p) in enumerate(params)}
        self.params = [p for _, p in params]
        self.param_ids = frozenset(self.index_of)
        self.registered = False
        self.displaced = False
        self.last_pass_local = False
        self.passes = 0
        self.perf = PerfCheck(cfg, world, "DistributedDataParallel")
        _live_states.add(self)
        _world.report_unhonoured(cfg)

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
        step = self.engine.begin_step()
        self.last_pass_local = not step.communicate
        self.passes += 1


_live_states: "weakref.WeakSet[DDPState]" = weakref.WeakSet()


def perseus_hook(state, bucket):  # type: ignore[no-untyped-def]
    """The DDP communication hook (DDPState, dist.GradBucket) -> torch.futures.Future of the bucket
    (a list holding it before torch 1.10): hand the bucket's gradients to the engine; the future completes
    when they are reduced.

    Unannotated on purpose: DDP compares annotations with its own types, which differ across torch versions."""
    engine = state.engine
    found = _grad_bucket.read(bucket)
    if found.index == 0:
        state.begin_pass()
    buffer = found.buffer
    indices = state.indices_of(found)
    outcome = torch.futures.Future(devices=[buffer.device]) if buffer.is_cuda else torch.futures.Future()
    errors: List[BaseException] = []

    def done(error: Optional[BaseException]) -> None:
        if error is not None:
            errors.append(error)
        outcome.set_result(found.result())

    def result(_: Any) -> Any:
        if errors:  # raised inside then(): DDP's backward re-raises it with this message
            raise errors[0]
        return found.result()

    engine.on_groups_done(engine.groups_of(indices), done)
    if found.is_last and state.perf.enabled:
        state.perf.local(engine.local_seconds())
    for i, gradient in zip(indices, found.gradients):
        engine.ready(i, gradient)
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
        entries = [_engine.Entry(n, p.numel(), p.dtype, p.device) for n, p in params]
        groups = _engine.plan_groups(_engine.partition(entries, cfg.fusion), cfg.fusion, 1)
        if groups:
            smallest = min(g.numel * torch.empty((), dtype=g.dtype).element_size() for g in groups)
            kwargs = dict(kwargs)
            kwargs["bucket_cap_mb"] = max(smallest, 1) / float(1024 * 1024)
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
