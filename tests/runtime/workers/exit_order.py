"""What is left at interpreter exit after perseus's exit handler ran (usage: exit_order.py ddp|hvd).

An atexit function registered before perseus builds its groups runs after perseus's handler (atexit is
last-in, first-out); it records whether the default process group and perseus's engine still exist."""

import atexit
import json
import os
import sys
import threading

import perseus  # noqa: F401
import torch
import torch.distributed as dist


def record() -> None:
    from perseus.torch import _comm

    with open(os.environ["PERSEUS_TEST_OUT"], "w") as out:
        json.dump({"default_group_alive": dist.is_initialized(), "world": _comm.current() is not None,
                   "perseus_threads": sorted(t.name for t in threading.enumerate() if t.name.startswith("perseus-"))},
                  out)


atexit.register(record)
if sys.argv[1] == "ddp":
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    model(torch.ones(3, 4)).sum().backward()
else:
    import perseus.torch.horovod as hvd

    hvd.init()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(torch.nn.Linear(4, 2).parameters(), lr=0.1))
    hvd.allreduce(torch.ones(2))
# the script ends without destroy_process_group() or hvd.shutdown()
