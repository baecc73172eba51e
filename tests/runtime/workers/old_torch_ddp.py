"""DDP training on whatever torch this interpreter has, with or without `import perseus`
(usage: old_torch_ddp.py perseus|plain); emits the trained parameters for comparison."""

import sys
import warnings

recorder = warnings.catch_warnings(record=True)
caught = recorder.__enter__()  # from the start: on torch < 1.8 perseus warns when torch loads DDP
warnings.simplefilter("always")
if sys.argv[1] == "perseus":
    import perseus  # noqa: F401

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from worker_common import emit  # noqa: E402

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
ddp = torch.nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
generator = torch.Generator().manual_seed(100 + rank)
for _ in range(6):
    data, target = torch.randn(8, 16, generator=generator), torch.randn(8, 4, generator=generator)
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(ddp(data), target).backward()
    optimizer.step()
recorder.__exit__(None, None, None)
emit({"torch": torch.__version__, "params": [p.detach().reshape(-1).tolist() for p in model.parameters()],
      "perseus_state": getattr(ddp, "_perseus_state", None) is not None,
      "warnings": [str(w.message)[:300] for w in caught if "perseus" in str(w.message)]})
dist.destroy_process_group()
