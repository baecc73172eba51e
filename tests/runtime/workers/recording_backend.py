"""A torch.distributed backend plugin that records every tensor handed to Gloo, then hands it on.

`init()` registers it as "perseus_rec" and creates the default process group with it; perseus builds
its own groups with the same backend (it follows the default group's backend), so every collective
of plain DDP and of perseus passes through `RecordingProcessGroup`, which wraps a real
ProcessGroupGloo. A record is (operation, dtype, bytes) of each tensor given to the backend.
"""

import threading
from datetime import timedelta
from typing import List, Tuple

import torch
import torch.distributed as dist

_c10d = torch._C._distributed_c10d
BACKEND = "perseus_rec"
ALL: List["RecordingProcessGroup"] = []


class RecordingProcessGroup(dist.ProcessGroup):
    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        self.inner = dist.ProcessGroupGloo(dist.PrefixStore("recorded", store), rank, size, timeout)
        self.records: List[Tuple[str, str, int]] = []
        self.label = "?"
        self._lock = threading.Lock()
        ALL.append(self)

    def _log(self, op, tensors):
        with self._lock:
            for t in tensors:
                self.records.append((op, str(t.dtype).replace("torch.", ""), t.numel() * t.element_size()))

    def allreduce(self, tensors, opts=dist.AllreduceOptions()):
        self._log("allreduce", tensors)
        return self.inner.allreduce(tensors, opts)

    def reduce(self, tensors, opts=dist.ReduceOptions()):
        self._log("reduce", tensors)
        return self.inner.reduce(tensors, opts)

    def broadcast(self, tensors, opts=dist.BroadcastOptions()):
        self._log("broadcast", tensors)
        return self.inner.broadcast(tensors, opts)

    def allgather(self, outputs, inputs, opts=_c10d.AllgatherOptions()):
        self._log("allgather", inputs)
        return self.inner.allgather(outputs, inputs, opts)

    def _allgather_base(self, output, input, opts=_c10d.AllgatherOptions()):
        self._log("allgather", [input])
        return self.inner._allgather_base(output, input, opts)

    def barrier(self, opts=dist.BarrierOptions()):
        return self.inner.barrier(opts)

    def getBackendName(self):
        return BACKEND

    def take(self):
        with self._lock:
            taken, self.records = self.records, []
        return taken


def _create(store, rank, size, timeout):
    return RecordingProcessGroup(store, rank, size, timeout)


def init(rank: int, size: int) -> None:
    dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
    dist.init_process_group(BACKEND, rank=rank, world_size=size, timeout=timedelta(seconds=60))


def default_group() -> RecordingProcessGroup:
    return ALL[0]


def label_perseus_groups(world) -> None:
    """Name the recorders of perseus's groups after the groups ('control', 'stream0/all', ...)."""
    groups = [world.control]
    for s in world.streams:
        groups += [g for g in (s.everyone, s.node, s.leaders) if g is not None]
    for group in groups:
        backend = group._backends.get("cpu")
        if backend is not None:
            backend.label = group.name.split("/", 2)[-1]


def perseus_records(world):
    """{group label: [(op, dtype, bytes), ...]} taken (and cleared) from perseus's groups."""
    label_perseus_groups(world)
    return {r.label: r.take() for r in ALL[1:] if r.label != "?"}
