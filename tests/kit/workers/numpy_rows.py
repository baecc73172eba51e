"""One rank of the numpy-binding conformance job (tests/kit/test_numpy_binding.py): every row of
tests/support/hvd_conformance.py through tests/support/numpy_binding, compared with numpy's answer. Prints
`REPORT {json}`: per row key, "ok" or what differed / was raised; and what a process set of rank 1 alone gave."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))

import numpy as np  # noqa: E402

import hvd_conformance as C  # noqa: E402
import numpy_binding as hvd  # noqa: E402


def run(row, rank):
    outputs = C.call_row(row, hvd, C.base(rank, row.dtype).astype(row.dtype), lambda a: a.copy())
    return outputs, [o.dtype.name for o in outputs]


def main():
    hvd.init()
    rank = hvd.rank()
    report = C.run_rows(C.universe(C.BINDINGS["numpy"]), rank, lambda row: run(row, rank))
    alone = hvd.add_process_set([1])
    on_set = hvd.allreduce(np.arange(3.0) + rank, op=hvd.Sum, process_set=alone).tolist() if rank == 1 else None
    hvd.remove_process_set(alone)
    print("REPORT " + json.dumps({"rank": rank, "rows": report, "set_of_rank_1": on_set}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
