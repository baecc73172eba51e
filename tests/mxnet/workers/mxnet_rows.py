"""One rank of the MXNet conformance job (tests/mxnet/test_mxnet_conformance.py): every row of
tests/support/hvd_conformance.py for perseus.mxnet, called as a Horovod user calls it, compared with numpy. Prints
`REPORT {json}`: per row key, "ok" or what differed / was raised."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))

import mxnet as mx  # noqa: E402

import hvd_conformance as C  # noqa: E402
import perseus.mxnet as hvd  # noqa: E402


def run(row, rank):
    outputs = C.call_row(row, hvd, mx.nd.array(C.base(rank, row.dtype), dtype=row.dtype), lambda t: t.copy())
    return [o.asnumpy() for o in outputs], [o.dtype.__name__ if isinstance(o.dtype, type) else str(o.dtype)
                                            for o in outputs]


def main():
    hvd.init()
    rank = hvd.rank()
    report = C.run_rows(C.universe(C.BINDINGS["mxnet"]), rank, lambda row: run(row, rank))
    print("REPORT " + json.dumps({"rank": rank, "rows": report}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
