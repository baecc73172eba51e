"""Rank --crash-rank exits with --code right after the first allreduce; the survivors then either enter a
second allreduce (--then allreduce: Gloo sees the peer go) or just wait (--then sleep, with a child
process of their own): only perseusrun can end those."""

import argparse
import datetime
import os
import subprocess
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--crash-rank", type=int, default=1)
p.add_argument("--code", type=int, default=3)
p.add_argument("--then", choices=["allreduce", "sleep"], default="allreduce")
p.add_argument("--token", default="")
args = p.parse_args()

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=300))
rank = dist.get_rank()
helper = subprocess.Popen(["sleep", "300"]) if args.then == "sleep" else None
print("PID {} {}".format(os.getpid(), helper.pid if helper else ""), flush=True)
t = torch.ones(1)
dist.all_reduce(t)
print("first allreduce {}".format(t.item()), flush=True)
if rank == args.crash_rank:
    print("CRASH_AT {}".format(time.time()), flush=True)
    os._exit(args.code)
if args.then == "allreduce":
    dist.all_reduce(t)
else:
    time.sleep(300)
print("survived", flush=True)
