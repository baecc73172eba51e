"""hvd.init() -> a collective -> hvd.shutdown(), CYCLES times (Horovod's test harness re-initialises after every
test). Usage: hvd_reinit.py CYCLES. Records how many cycles completed and the first error."""

import sys
import time
import traceback

import torch

import perseus.torch.horovod as hvd
from worker_common import emit

cycles = int(sys.argv[1])
done, error = 0, None
start = time.monotonic()
try:
    for cycle in range(cycles):
        hvd.init()
        total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum, name="cycle.{}".format(cycle))
        if total.item() != hvd.size() * (hvd.size() + 1) / 2:
            raise AssertionError("cycle {}: sum {}".format(cycle, total.item()))
        hvd.barrier()
        hvd.shutdown()
        if hvd.is_initialized():
            raise AssertionError("cycle {}: still initialised after shutdown".format(cycle))
        done += 1
except Exception:
    error = traceback.format_exc()[-3000:]
emit({"done": done, "error": error, "seconds": time.monotonic() - start})
