"""Which ports a rank listens on, and where perseus's rendezvous lives. Usage: rendezvous_ports.py MODE.

    ddp   torch DDP (init_process_group env://) with `import perseus`, a few steps
    hvd   hvd.init() (PERSEUS_USE_DDP_LAUNCHER as the environment says), one allreduce
"""

import os
import sys

import perseus  # noqa: F401
import torch
import torch.distributed as dist

from worker_common import emit

MODE = sys.argv[1]


def listening_ports():
    """Ports this process listens on (TCP LISTEN sockets it owns, from /proc)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                found.add(int(fields[1].split(":")[1], 16))
    return sorted(found)


if MODE == "ddp":
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.full((4, 8), float(dist.get_rank() + 1))).sum().backward()
        optimizer.step()
    result = {"weight_sum": float(model.module.weight.sum())}
else:
    import perseus.torch.horovod as hvd

    hvd.init()
    result = {"sum": hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum).item()}

from perseus.torch import _comm  # noqa: E402

result.update({"listening": listening_ports(), "store": list(_comm.current().store),
               "torch_initialised": dist.is_initialized()})
emit(result)
if dist.is_initialized():
    dist.barrier()
else:
    hvd.barrier()
