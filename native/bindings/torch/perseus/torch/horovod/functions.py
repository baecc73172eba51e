"""Whole-model helpers: broadcast_parameters, broadcast_optimizer_state, broadcast_object, allgather_object."""

import hashlib
import pickle
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import torch

from perseus.horovod_kit.process_sets import check_global, global_process_set
from perseus.torch.horovod.process_sets import on_process_set, set_root
from perseus.torch import _bytes
from perseus.torch import _control as _ops
from perseus.torch.horovod import basics
from perseus.torch.horovod import collectives as C


def _named_tensors(params: Union[Dict[str, Any], Iterable[Tuple[str, Any]]]) -> List[Tuple[str, torch.Tensor]]:
    items = sorted(params.items()) if isinstance(params, dict) else list(params)
    named = []
    for entry in items:
        if not (isinstance(entry, tuple) and len(entry) == 2):
            raise ValueError("broadcast_parameters() takes a state_dict or (name, tensor) pairs such as "
                             "model.named_parameters(), got an item of type {}".format(type(entry).__name__))
        name, value = entry
        if not torch.is_tensor(value):
            raise ValueError("invalid params of type: {} (entry '{}'); broadcast_parameters() broadcasts tensors, "
                             "use broadcast_object() for other values".format(type(value).__name__, name))
        named.append((str(name), value))
    return named


def _layout_digest(named: List[Tuple[str, torch.Tensor]]) -> int:
    text = ";".join("{}:{}:{}".format(n, tuple(t.shape), t.dtype) for n, t in named)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def broadcast_parameters(params: Union[Dict[str, Any], Iterable[Tuple[str, Any]]], root_rank: int) -> None:
    """Overwrite every tensor of `params` (a state_dict or named_parameters()) with root_rank's values.

    Tensors are packed per dtype and device into one buffer each, so a model costs a few broadcasts."""
    named = _named_tensors(params)
    basics.world()  # Horovod's not-initialised error before anything else
    digest = _layout_digest(named)
    records = C._control.exchange(C.K_BROADCAST_MANY, "broadcast_parameters", root=root_rank, digest=digest)
    if any(r.joined for r in records):
        raise C.HorovodCollectiveError("broadcast_parameters(): a rank has called hvd.join(); broadcast first")
    if len({r.digest for r in records}) > 1:
        _explain_layout_mismatch(named, root_rank)
    C.check_agreement(records, "broadcast_parameters", "parameters", same_shape=False)
    groups: Dict[Tuple[torch.dtype, str], List[torch.Tensor]] = {}
    for _, tensor in named:
        groups.setdefault((tensor.dtype, str(tensor.device)), []).append(tensor)
    with torch.no_grad():
        for (dtype, device), tensors in groups.items():
            flat = torch.cat([t.detach().reshape(-1) for t in tensors]) if tensors else torch.empty(0, dtype=dtype)
            _ops.broadcast(flat, root_rank).wait()
            offset = 0
            for t in tensors:
                t.copy_(flat[offset: offset + t.numel()].view_as(t))
                offset += t.numel()


def _explain_layout_mismatch(named: List[Tuple[str, torch.Tensor]], root_rank: int) -> None:
    mine = ["{} {} {}".format(n, list(t.shape), str(t.dtype).replace("torch.", "")) for n, t in named]
    everyone = allgather_object(mine, name="broadcast_parameters.layout")
    reference = everyone[root_rank]
    for rank, layout in enumerate(everyone):
        if layout == reference:
            continue
        for position, (theirs, root_entry) in enumerate(zip(layout, reference)):
            if theirs != root_entry:
                raise C.HorovodCollectiveError(
                    "broadcast_parameters(): rank {} holds '{}' where root rank {} holds '{}' (entry {}); every rank "
                    "must pass the same parameters".format(rank, theirs, root_rank, root_entry, position))
        raise C.HorovodCollectiveError(
            "broadcast_parameters(): rank {} passes {} tensors, root rank {} passes {}".format(
                rank, len(layout), root_rank, len(reference)))


@on_process_set("hvd.broadcast_object")
def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None,
                     process_set: Any = global_process_set) -> Any:
    """root_rank's `obj` (any picklable object, tensors included) on every rank (of the process set)."""
    check_global(process_set, "hvd.broadcast_object")
    name = name or C._control.auto_name("broadcast_object")
    world = basics.world()
    root_rank = set_root(root_rank, "hvd.broadcast_object")  # a global rank; in a process set, its index there
    records = C._control.exchange(C.K_BROADCAST_MANY, name, root=root_rank, digest=C._digest(name))
    if any(r.joined for r in records):
        raise C.HorovodCollectiveError("broadcast_object('{}'): a rank has called hvd.join()".format(name))
    C.check_agreement(records, "hvd.broadcast_object", name, same_shape=False)
    payload = pickle.dumps(obj) if world.rank == root_rank else b""
    length = torch.tensor([len(payload)], dtype=torch.int64)
    _ops.broadcast(length, root_rank).wait()
    buffer = _bytes.to_tensor(payload) if world.rank == root_rank else torch.empty(int(length.item()), dtype=torch.uint8)
    _ops.broadcast(buffer, root_rank).wait()
    return obj if world.rank == root_rank else pickle.loads(_bytes.to_bytes(buffer))


def allgather_object(obj: Any, name: Optional[str] = None) -> List[Any]:
    """Every rank's `obj` (picklable), in rank order."""
    name = name or C._control.auto_name("allgather_object")
    world = basics.world()
    records = C._control.exchange(C.K_BROADCAST_MANY, name, digest=C._digest(name))
    if any(r.joined for r in records):
        raise C.HorovodCollectiveError("allgather_object('{}'): a rank has called hvd.join()".format(name))
    C.check_agreement(records, "hvd.allgather_object", name, same_shape=False)
    payload = pickle.dumps(obj)
    lengths = [torch.zeros(1, dtype=torch.int64) for _ in range(world.size)]
    _ops.allgather(lengths, torch.tensor([len(payload)], dtype=torch.int64)).wait()
    longest = max(int(n.item()) for n in lengths)
    mine = torch.zeros(longest, dtype=torch.uint8)
    if payload:
        mine[: len(payload)] = _bytes.to_tensor(payload)
    gathered = [torch.empty(longest, dtype=torch.uint8) for _ in range(world.size)]
    _ops.allgather(gathered, mine).wait()
    return [pickle.loads(_bytes.to_bytes(g[: int(n.item())])) for g, n in zip(gathered, lengths)]


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer, root_rank: int, model: Any = None) -> None:
    """Give every rank root_rank's optimizer state (hyper-parameters and per-parameter state such as momentum).
    `model` (Horovod: to find sparse parameters) is not needed: the whole state travels as one object.

    As Horovod does, an optimizer without state yet takes one local step on zero gradients first (every
    parameter that requires a gradient gets a zero one, also one that holds a gradient: a stale gradient, e.g.
    of a step an elastic reset interrupted, must not move the weights), so that every rank has state to receive."""
    if len(optimizer.state_dict()["state"]) == 0:
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    p.grad = torch.zeros_like(p)
                    if isinstance(optimizer, torch.optim.SparseAdam):
                        p.grad = p.grad.to_sparse()
        if hasattr(optimizer, "_perseus_named"):  # a DistributedOptimizer: the wrapped class's step, no allreduce
            super(optimizer.__class__, optimizer).step()
        else:
            optimizer.step()
    state = broadcast_object(optimizer.state_dict(), root_rank, name="broadcast_optimizer_state")
    if basics.rank() != root_rank:
        optimizer.load_state_dict(state)
