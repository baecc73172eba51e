"""hvd.init() under a plain `mpirun -np N` with no MASTER_ADDR and no torch.distributed: the engine agrees
its address and port through MPI. Prints one REPORT line per rank."""

import json
import os

import torch
import torch.distributed as dist

import perseus.torch.horovod as hvd

assert "MASTER_ADDR" not in os.environ and "MASTER_PORT" not in os.environ
hvd.init()
total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum)
average = hvd.allreduce(torch.full((3,), float(hvd.rank())), op=hvd.Average)
gathered = hvd.allgather(torch.tensor([hvd.rank()]))
rank0 = hvd.broadcast_object({"from": hvd.rank()}, root_rank=0)
net = torch.nn.Linear(4, 1)
torch.manual_seed(hvd.rank())
net.reset_parameters()
opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), named_parameters=net.named_parameters())
hvd.broadcast_parameters(net.state_dict(), root_rank=0)
for _ in range(3):
    opt.zero_grad()
    net(torch.full((2, 4), float(hvd.rank() + 1))).sum().backward()
    opt.step()
report = {"rank": hvd.rank(), "size": hvd.size(), "local_size": hvd.local_size(), "sum": total.item(),
          "average": average.tolist(), "gathered": gathered.reshape(-1).tolist(), "rank0": rank0,
          "weights": [float(v) for v in torch.cat([p.detach().reshape(-1) for p in net.parameters()])],
          "torch_initialised": dist.is_initialized(), "store": list(hvd.basics.world().store[:1])}
print("REPORT " + json.dumps(report), flush=True)
hvd.shutdown()
