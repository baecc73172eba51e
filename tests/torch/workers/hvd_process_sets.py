"""4 ranks, process sets {0,1} (made at init), {2,3} and {0,2} through perseus.torch.horovod: each rank reports
what the collectives on its sets gave (tests/torch/test_hvd_process_sets.py compares with torch on one process)."""

import time

import torch

import perseus.torch.horovod as hvd
from worker_common import emit

low = hvd.ProcessSet([0, 1])
hvd.init(process_sets=[low])
r = hvd.rank()
high = hvd.add_process_set([2, 3])
even = hvd.add_process_set(hvd.ProcessSet([0, 2]))
mine = low if r < 2 else high
out = {"rank": r, "set_rank": mine.rank(), "set_size": mine.size(), "in_even": even.included(),
       "ids": [low.process_set_id, high.process_set_id, even.process_set_id]}
t = torch.arange(4, dtype=torch.float64) + 10 * r
if r == 0:
    time.sleep(5.0)
started = time.time()
out["sum"] = hvd.allreduce(t, op=hvd.Sum, process_set=mine).tolist()
out["sum_seconds"] = time.time() - started
out["finished_at"] = time.time()
out["average"] = hvd.allreduce(t, process_set=mine, name="avg").tolist()
out["max"] = hvd.allreduce(t, op=hvd.Max, process_set=mine).tolist()
out["gathered"] = hvd.allgather(torch.tensor([[r, r]], dtype=torch.int32), process_set=mine).tolist()
root = 3 if mine is high else 1
out["broadcast"] = hvd.broadcast(torch.tensor([r] * 3), root_rank=root, process_set=mine).tolist()
out["object"] = hvd.broadcast_object({"from": r}, root_rank=root, process_set=mine)
out["reducescatter"] = hvd.reducescatter(torch.ones(4, 2) * (r + 1), op=hvd.Sum, process_set=mine).tolist()
x = torch.ones(3, requires_grad=True)
hvd.allreduce(x * (r + 1), op=hvd.Sum, process_set=mine).sum().backward()
out["grad"] = x.grad.tolist()  # Horovod: the gradient of a Sum allreduce is the allreduce (Sum) of the incoming one
if even.included():
    out["even_average"] = hvd.allreduce(torch.tensor([float(r)]), process_set=even).tolist()
outsider = high if r < 2 else low
try:
    hvd.allreduce(t, process_set=outsider)
    out["outsider"] = "accepted"
except ValueError as error:
    out["outsider"] = str(error)
out["job_sum"] = hvd.allreduce(torch.tensor([1.0]), op=hvd.Sum).tolist()  # the job's world is untouched
# DistributedOptimizer on {0,2}: its members step on their averaged gradient, ranks 1 and 3 on their own
model = torch.nn.Linear(2, 1, bias=False)
with torch.no_grad():
    model.weight.fill_(1.0)
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
                               process_set=even)
model(torch.tensor([[float((r + 1) ** 2), 1.0]])).sum().backward()
opt.step()
out["set_optimizer_weight"] = model.weight.detach().flatten().tolist()
out["removed"] = [hvd.remove_process_set(even), hvd.remove_process_set(high), hvd.remove_process_set(low),
                  hvd.remove_process_set(low)]
emit(out)
hvd.shutdown()
