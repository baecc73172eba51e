"""hvd.init() in the launch modes of the seed, and GLOO_TIMEOUT_SECONDS. Usage: hvd_init.py MODE."""

import os
import socket
import sys
import time

import torch
import torch.distributed as dist

import perseus.torch.horovod as hvd
from worker_common import emit

MODE = sys.argv[1]
RANK = int(os.environ["RANK"])


def perseus_port_open() -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex((os.environ["MASTER_ADDR"], int(os.environ["PERSEUS_MASTER_PORT"]))) == 0


if MODE == "launcher":
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(RANK + 1)]), op=hvd.Sum)
    emit({"size": hvd.size(), "sum": total.item(), "perseus_port_open": perseus_port_open(),
          "default_group_port": os.environ.get("MASTER_PORT"), "backend": str(dist.get_backend())})
elif MODE == "timeout":
    hvd.init()
    hvd.barrier()
    if RANK == 1:
        time.sleep(float(os.environ["CASE_SLEEP"]))
        emit({"slept": True})
        os._exit(0)
    start = time.monotonic()
    try:
        hvd.allreduce(torch.ones(4), name="never.matched")
        emit({"raised": False})
    except Exception as error:
        emit({"raised": True, "seconds": time.monotonic() - start, "error": str(error)[:500]})
    os._exit(0)
