"""The Horovod example's whole-model helpers in an environment without numpy: broadcast_parameters,
broadcast_optimizer_state (momentum state), broadcast_object (a dict holding a tensor), allgather_object."""

import importlib.util

import torch

import perseus.torch.horovod as hvd
from worker_common import emit

hvd.init()
rank = hvd.rank()
torch.manual_seed(rank)  # every rank starts from other weights
model = torch.nn.Linear(6, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
model(torch.randn(2, 6)).sum().backward()
optimizer.step()  # momentum buffers now differ between ranks
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
momentum = [optimizer.state[p]["momentum_buffer"].sum().item() for p in model.parameters()]
received = hvd.broadcast_object({"epoch": 7 + rank, "tensor": torch.arange(4) * (rank + 1), "text": "é" * rank},
                                root_rank=0)
gathered = hvd.allgather_object(("rank", rank, b"\x00\xff" * (rank + 1)))
emit({"numpy_importable": importlib.util.find_spec("numpy") is not None,
      "weight_sum": model.weight.sum().item(), "momentum": momentum,
      "received": [received["epoch"], received["tensor"].tolist(), received["text"]],
      "gathered": [[g[0], g[1], list(g[2])] for g in gathered]})
hvd.shutdown()
