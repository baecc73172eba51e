"""One rank of the exit soak (bench/exit_soak.py): a few real training steps, then the script ends.

    exit_worker.py ddp [--perseus] [--destroy]   torch DDP (init_process_group env://), optionally with
                                                 `import perseus`, optionally destroy_process_group() at the end
    exit_worker.py hvd                           perseus.torch.horovod, never calling hvd.shutdown()

Every rank prints one `path:` line saying what carried the gradients: with perseus, the engine (how its
rendezvous store was found: "perseusrun" when it joined the store perseusrun serves) and whether perseus's
completion thread ran; without it, that perseus was never loaded. The soak checks that line.
"""

import argparse

parser = argparse.ArgumentParser()
parser.add_argument("api", choices=("ddp", "hvd"))
parser.add_argument("--perseus", action="store_true")
parser.add_argument("--destroy", action="store_true")
args = parser.parse_args()

if args.perseus or args.api == "hvd":
    import perseus  # noqa: F401

import torch
import torch.distributed as dist

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
data, target = torch.randn(16, 32), torch.randn(16, 4)

if args.api == "ddp":
    dist.init_process_group("gloo")
    trained = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(trained.parameters(), lr=0.01)
else:
    import perseus.torch.horovod as hvd

    hvd.init()
    trained = model
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                         named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

for _ in range(5):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(trained(data), target)
    loss.backward()
    optimizer.step()
print("done loss {:.6f}".format(loss.item()), flush=True)


def path() -> str:
    import sys
    import threading

    if "perseus" not in sys.modules:
        return "plain torch"
    from perseus.torch import _comm

    found = _comm.current()
    if found is None:
        return "perseus without an engine"
    completions = any(t.name == "perseus-completions" for t in threading.enumerate())
    return "engine rank {}/{} store {} completions {}".format(found.rank, found.size, found.store[0],
                                                             "ran" if completions else "idle")


print("path: " + path(), flush=True)
if args.destroy:
    dist.destroy_process_group()
