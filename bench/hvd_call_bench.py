"""Per-call cost of perseus.torch.horovod's control path: 400 synchronous 1 KiB allreduces and a
DistributedOptimizer step of a small MLP (8 x Linear(64, 64)), the mean time of each printed as JSON by rank 0.

    perseusrun -np 2 -- python bench/hvd_call_bench.py
    PYTHONPATH=<tree>/native/runtime:<tree>/native/bindings/torch perseusrun -np 2 -- python bench/hvd_call_bench.py

(the second form runs another checkout's Python layers over the installed engine: a before/after pair)."""
import argparse
import json
import time

import torch

import perseus.torch.horovod as hvd

argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
hvd.init()
t = torch.ones(256)
for _ in range(50):
    hvd.allreduce(t, name=None)
n = 400
start = time.perf_counter()
for _ in range(n):
    hvd.allreduce(t)
small = (time.perf_counter() - start) / n * 1e6
model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(8)])
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01), named_parameters=model.named_parameters())
x = torch.randn(32, 64)
for _ in range(10):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
steps = 100
start = time.perf_counter()
for _ in range(steps):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
step = (time.perf_counter() - start) / steps * 1e3
if hvd.rank() == 0:
    print(json.dumps({"allreduce_1KiB_us": round(small, 1), "optimizer_step_ms": round(step, 2)}))
hvd.shutdown()
