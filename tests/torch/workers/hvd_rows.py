"""One rank of the torch conformance job (tests/torch/test_hvd_conformance.py): every row of
tests/support/hvd_conformance.py for perseus.torch.horovod, called as a Horovod user calls it, compared with numpy.
Rows of the allgather mode this job does not run (PERSEUS_CHANGE_HVD_ALLGATHER) are left out. Emits its result
(worker_common.emit): per row key, "ok" or what differed / was raised."""

import os

import torch

import hvd_conformance as C
import perseus.torch.horovod as hvd
from worker_common import emit

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
          "bool": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}


def run(row: C.Row, rank: int):
    outputs = C.call_row(row, hvd, torch.from_numpy(C.base(rank, row.dtype)).to(DTYPES[row.dtype]), torch.clone)
    return [o.to(torch.float64).numpy() if o.dtype != torch.bool else o.numpy() for o in outputs], \
        [NAMES.get(o.dtype, str(o.dtype)) for o in outputs]


def main() -> None:
    hvd.init()
    rank = hvd.rank()
    mode = "concat" if os.environ.get("PERSEUS_CHANGE_HVD_ALLGATHER") == "1" else "stack"
    rows = [row for row in C.universe(C.BINDINGS["torch"])
            if row.allgather in ("", mode) and (mode == "concat" or row.collective == "allgather")]
    emit({"rank": rank, "rows": C.run_rows(rows, rank, lambda row: run(row, rank))})
    hvd.shutdown()


if __name__ == "__main__":
    main()
