"""A plain torch.distributed job (no perseus import needed): env:// rendezvous from the torchrun variables
perseusrun sets, one allreduce, one JSON line per rank. --detect also reports perseus.launch.detect()."""

import json
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, size = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
report = {"rank": rank, "size": size, "sum": t.item(), "pid": os.getpid(),
          "netns": os.stat("/proc/self/ns/net").st_ino,
          "env": {k: os.environ.get(k) for k in ("HOROVOD_RANK", "HOROVOD_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                                                   "MASTER_ADDR", "MASTER_PORT", "PERSEUS_MASTER_PORT", "GLOO_SOCKET_IFNAME",
                                                   "OMPI_COMM_WORLD_RANK", "EXTRA_VAR")}}
if "--detect" in sys.argv:
    from perseus.launch import detect
    report["detect"] = detect().to_dict()
print("REPORT " + json.dumps(report), flush=True)
dist.destroy_process_group()
