"""DistributedDataParallel scenarios under `import perseus`: plain DDP on the recording Gloo backend, perseus
on its native engine, whose wire is read from the engine's own byte counters (perseus_engine_wire_bytes).

Usage: ddp_cases.py parity | dtype2 | suite. Every rank emits what it observed (parameters,
recorded collectives, bytes per wire level and dtype, errors) for the test to judge. `suite` imports perseus BEFORE torch (as the
manual says) and runs several cases in one job, each with its own PERSEUS_* settings (applied with
perseus.config.reload() before its model is wrapped); `parity` and `dtype2` import it after torch
and compare with plain DDP trained first in the same process.
"""

import sys

if sys.argv[1] == "suite":
    import perseus  # noqa: F401  (before torch, as the manual says)

import os
import time
import traceback
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import recording_backend as rec
from worker_common import emit

RANK, SIZE = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
STEPS = int(os.environ.get("CASE_STEPS", "20"))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


def batch(step, rank=RANK, n=16):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(n, 32, generator=g), torch.randint(0, 10, (n,), generator=g)


class ChannelsLastNet(nn.Module):
    """Convolutions in channels_last: DDP hands perseus their gradients as non-contiguous bucket views."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.head = nn.Linear(32 * 16, 10)

    def forward(self, x):
        x = x.reshape(-1, 2, 4, 4).contiguous(memory_format=torch.channels_last)
        return self.head(F.relu(self.conv2(F.relu(self.conv1(x)))).flatten(1))


def new_model():
    torch.manual_seed(0)
    if os.environ.get("CASE_MODEL") == "channels_last":
        return ChannelsLastNet().to(memory_format=torch.channels_last)
    return Net()


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def train(ddp, steps, on_step=None):
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(steps):
        x, y = batch(step)
        opt.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step)
    return losses


def summarize(records):
    """{group: {"op dtype": [count, bytes]}}"""
    out = {}
    for label, entries in records.items():
        summary = {}
        for op, dtype, nbytes in entries:
            key = "{} {}".format(op, dtype)
            count, total = summary.get(key, (0, 0))
            summary[key] = (count + 1, total + nbytes)
        out[label] = summary
    return out


def gradient_numel(model):
    return sum(p.numel() for p in model.parameters())


def perseus_state(ddp):
    from perseus.torch import ddp as perseus_ddp
    return perseus_ddp.state_of(ddp)


def world():
    from perseus.torch import _comm
    return _comm.current()


LEVELS = ("all", "node", "leaders")


def wire_now():
    """{level: {dtype: [collectives, bytes]}} this rank handed to the transport so far (perseus's engine)."""
    w = world()
    return {level: {dt: [calls, nbytes] for dt, (nbytes, calls) in w.wire(level).items()} for level in LEVELS}


def wire_since(before):
    """What crossed each level since `before` (a wire_now() of the same engine), non-zero entries only."""
    after = wire_now()
    out = {}
    for level in LEVELS:
        out[level] = {}
        for dt, (calls, nbytes) in after[level].items():
            c0, b0 = before.get(level, {}).get(dt, [0, 0])
            if calls - c0:
                out[level][dt] = [calls - c0, nbytes - b0]
    return out


def configure(**variables):
    """Set PERSEUS_* variables (None: unset) for the next wrapped model."""
    from perseus import config
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)
    config.reload()


# ---- whole jobs ---------------------------------------------------------------------------------

def job_parity():
    """Plain DDP, then `import perseus` (torch already imported) and the same training under perseus."""
    rec.init(RANK, SIZE)
    plain = DDP(new_model())
    rec.default_group().take()
    plain_losses = train(plain, STEPS)
    plain_records = rec.default_group().take()
    import perseus  # noqa: F401  (after torch: must still take effect)
    accelerated = DDP(new_model())
    state = perseus_state(accelerated)
    before = wire_now()
    rec.default_group().take()
    losses = train(accelerated, STEPS)
    records = wire_since(before)
    return {
        "plain": flat_params(plain).tolist(), "perseus": flat_params(accelerated).tolist(),
        "plain_losses": plain_losses, "losses": losses,
        "plain_records": summarize({"default": plain_records}), "records": records,
        "default_group_during_perseus": summarize({"default": rec.default_group().take()}),
        "numel": gradient_numel(accelerated), "buckets": len(state.buckets_seen),
        "policy": state.policy, "hook_registered": state.registered,
    }


def job_dtype2():
    """4 ranks as 2 nodes x 2 (LOCAL_WORLD_SIZE=2, GROUP_RANK): fp32 inside the node, fp16 between leaders."""
    rec.init(RANK, SIZE)
    plain = DDP(new_model())
    train(plain, STEPS)
    import perseus  # noqa: F401
    model = DDP(new_model())
    before = wire_now()
    losses = train(model, STEPS)
    records = wire_since(before)
    topology = {"node": world().node, "num_nodes": world().num_nodes, "local_rank": world().local_rank}
    policy = perseus_state(model).policy
    modes = {}
    for dtype in ("0", "1"):  # PERSEUS_ALLREDUCE_MODE=1: two levels with one dtype on both (a new engine)
        configure(PERSEUS_ALLREDUCE_MODE="1", PERSEUS_ALLREDUCE_DTYPE=dtype)
        other = DDP(new_model())
        before = wire_now()
        train(other, 5)
        modes[dtype] = {"records": wire_since(before), "policy": perseus_state(other).policy,
                        "params": flat_params(other).tolist()}
    plain5 = new_model()  # the 5-step reference: every rank's gradients averaged by hand
    opt = torch.optim.SGD(plain5.parameters(), lr=0.05, momentum=0.9)
    for step in range(5):
        x, y = batch(step)
        opt.zero_grad()
        F.cross_entropy(plain5(x), y).backward()
        for p in plain5.parameters():
            dist.all_reduce(p.grad)
            p.grad /= SIZE
        opt.step()
    return {"records": records, "numel": gradient_numel(model), "losses": losses,
            "plain": flat_params(plain).tolist(), "params": flat_params(model).tolist(),
            "topology": topology, "policy": policy, "modes": modes, "plain5": flat_params(plain5).tolist()}


def job_suite():
    rec.init(RANK, SIZE)
    results = {"import_first": {"wrapped": getattr(DDP.__init__, "_perseus_wrapped", False)}}
    for name, variables, case in SUITE:
        configure(**variables)
        try:
            results[name] = {"ok": True, "value": case()}
        except Exception:
            results[name] = {"ok": False, "error": traceback.format_exc()}
        configure(**{k: None for k in variables})
    return results


# ---- cases of the suite ---------------------------------------------------------------------------

def train_recorded(steps, **ddp_kwargs):
    """A fresh perseus DDP model trained `steps` steps: its state and what crossed the wire meanwhile."""
    model = DDP(new_model(), **ddp_kwargs)
    state = perseus_state(model)
    before = wire_now()
    train(model, steps)
    return model, state, wire_since(before)


def case_fusion():
    """Small DDP buckets (one or two parameters each): PERSEUS_ALLREDUCE_FUSION=0 sends each bucket alone;
    automatic fusion may join the buckets agreed in one negotiation cycle; fp16 only, 2 bytes per element."""
    steps = 3
    model, state, records = train_recorded(steps, bucket_cap_mb=0.004)
    return {"buckets": len(state.buckets_seen), "submissions": state.submissions, "steps": steps, "records": records,
            "numel": gradient_numel(model), "streams": world().engine.info()["streams"]}


def case_streams():
    """PERSEUS_ALLREDUCE_STREAMS=4: the engine runs four streams (its collectives spread over them)."""
    model, state, records = train_recorded(4, bucket_cap_mb=0.004)
    return {"streams": world().engine.info()["streams"], "records": records, "numel": gradient_numel(model)}


def case_nancheck():
    model = DDP(new_model())
    if RANK == SIZE - 1:
        model.module.fc2.weight.register_hook(lambda g: g * float("nan"))
    x, y = batch(0)
    try:
        F.cross_entropy(model(x), y).backward()
        return {"raised": False}
    except Exception as error:
        return {"raised": True, "type": type(error).__name__, "message": str(error)}


def case_overflow():
    """Gradients of 5000 on 2 ranks: scaled by 10 they overflow fp16 (50000 per rank, 100000 summed > 65504);
    scaled by 5 their fp16 sum (50000) fits."""
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1, bias=False))
    x = torch.full((1, 4), 5000.0)
    try:
        model(x).sum().backward()
        return {"raised": False, "grad": model.module.weight.grad.tolist()}
    except Exception as error:
        return {"raised": True, "message": str(error)}


def case_accumulate():
    """PERSEUS_ACCUMULATE_N_STEPS=n with an unchanged loop vs the DDP no_sync reference: n local backward
    passes summed, then one average over the ranks and one optimizer step (computed here by hand)."""
    n = int(os.environ["PERSEUS_ACCUMULATE_N_STEPS"])
    steps = 8
    reference = new_model()
    opt = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
    for step in range(steps):
        x, y = batch(step)
        F.cross_entropy(reference(x), y).backward()
        if step % n == n - 1:
            for p in reference.parameters():
                dist.all_reduce(p.grad)
                p.grad /= SIZE
            opt.step()
            opt.zero_grad()
    model = DDP(new_model())
    before = wire_now()
    train(model, steps)
    records = wire_since(before)
    return {"reference": flat_params(reference).tolist(), "perseus": flat_params(model).tolist(),
            "records": records, "numel": gradient_numel(model), "steps": steps}


def case_downsample():
    """Loss linear in the weights (constant gradient g): element i is sent at the steps s with s % n == i % n,
    carrying every gradient since its last send (momentum 1), so after S steps it moved by
    -lr * g * (its last send step + 1); bytes on the wire are 1/n of fp16."""
    n = int(os.environ["PERSEUS_DOWNSAMPLE_N_ELEMENTS"])
    steps = 8
    torch.manual_seed(0)
    model = DDP(nn.Linear(1000, 1, bias=False))
    before = wire_now()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.linspace(-1, 1, 1000).reshape(1, 1000) * (RANK + 1)
    start = model.module.weight.detach().clone()
    for _ in range(steps):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    records = wire_since(before)
    sent = records["all"].get("float16", [0, 0])[1]
    mean_grad = torch.linspace(-1, 1, 1000) * (SIZE + 1) / 2.0
    last_send = torch.tensor([max(s for s in range(steps) if s % n == i % n) for i in range(1000)])
    return {"delta": (model.module.weight.detach() - start).reshape(-1).tolist(),
            "expected_delta": (-0.01 * mean_grad * (last_send + 1)).tolist(), "bytes": sent, "numel": 1000,
            "steps": steps, "n": n}


def case_displace():
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = DDP(new_model())
        model.register_comm_hook(None, fp16_compress_hook)
    rec.default_group().take()
    train(model, 2)
    return {"warnings": [str(w.message) for w in caught], "default": summarize({"d": rec.default_group().take()}),
            "registered": perseus_state(model).registered}


def case_perf():
    model = DDP(new_model())
    train(model, 7, on_step=(lambda step: time.sleep(0.2)) if RANK == 1 else None)
    return {"reports": perseus_state(model).perf.reports}


def case_unhonoured():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DDP(new_model())
        DDP(new_model())  # a second model: each warning comes once per process
    return [str(w.message) for w in caught if "not honoured" in str(w.message)]


SUITE = [
    ("fusion0", {"PERSEUS_ALLREDUCE_FUSION": "0"}, case_fusion),
    ("fusion_auto", {}, case_fusion),
    ("streams_set", {"PERSEUS_ALLREDUCE_FUSION": "0", "PERSEUS_ALLREDUCE_STREAMS": "4"}, case_streams),
    ("nancheck", {"PERSEUS_ALLREDUCE_NANCHECK": "1"}, case_nancheck),
    ("nancheck_off", {}, case_nancheck),
    ("overflow10", {"PERSEUS_ALLREDUCE_NANCHECK": "1", "PERSEUS_ALLREDUCE_GRADIENT_SCALE": "10"}, case_overflow),
    ("overflow5", {"PERSEUS_ALLREDUCE_NANCHECK": "1", "PERSEUS_ALLREDUCE_GRADIENT_SCALE": "5"}, case_overflow),
    ("accumulate", {"PERSEUS_ACCUMULATE_N_STEPS": "2"}, case_accumulate),
    ("downsample", {"PERSEUS_DOWNSAMPLE_N_ELEMENTS": "4"}, case_downsample),
    ("displace", {}, case_displace),
    ("perf", {"PERSEUS_PERF_CHECK_N_STEPS": "3"}, case_perf),
    ("unhonoured", {"PERSEUS_OFFLINE_NEG": "1", "PERSEUS_NCCL_ENABLE": "1", "PERSEUS_GRADIENT_MOMENTUM": "0.9",
                    "PERSEUS_ALLREDUCE_DTYPE": "1", "PERSEUS_ALLREDUCE_GRADIENT_SCALE": "4",
                    "PERSEUS_NCCL_NETWORK_INTERFACE": "lo"}, case_unhonoured),
]


if __name__ == "__main__":
    try:
        emit(globals()["job_" + sys.argv[1]]())
    except Exception:
        traceback.print_exc()
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
