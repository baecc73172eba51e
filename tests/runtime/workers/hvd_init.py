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


def established_local_addresses():
    """Local addresses of this process's established TCP connections (from /proc)."""
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
            if fields[3] != "01" or fields[9] not in inodes:
                continue
            raw = fields[1].split(":")[0]
            if len(raw) == 8:
                found.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(raw)[::-1]))
            else:
                words = b"".join(bytes.fromhex(raw[i:i + 8])[::-1] for i in range(0, 32, 8))
                found.add(socket.inet_ntop(socket.AF_INET6, words))
    return sorted(found)


if MODE == "interfaces":
    hvd.init()
    hvd.allreduce(torch.ones(2), name="warm")  # the control group is connected; so are the streams'
    emit({"local_addresses": established_local_addresses()})
elif MODE == "launcher":
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(RANK + 1)]), op=hvd.Sum)
    emit({"size": hvd.size(), "sum": total.item(), "perseus_port_open": perseus_port_open(),
          "default_group_port": os.environ.get("MASTER_PORT"),
          "backend": str(dist.get_backend()) if dist.is_initialized() else None})
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
