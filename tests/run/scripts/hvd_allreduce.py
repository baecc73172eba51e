"""The Horovod API of perseus (`import perseus.torch.horovod as hvd`) under perseusrun: init, allreduce."""

import json

import torch

import perseus.torch.horovod as hvd

hvd.init()
t = torch.tensor([float(hvd.rank() + 1)])
total = hvd.allreduce(t, op=hvd.Sum)
average = hvd.allreduce(t)
print("REPORT " + json.dumps({"rank": hvd.rank(), "size": hvd.size(), "local_rank": hvd.local_rank(),
                              "local_size": hvd.local_size(), "sum": total.item(), "avg": average.item()}), flush=True)
hvd.shutdown()
