"""One rank of the TensorFlow conformance job (tests/tensorflow/test_tf_conformance.py): every row of
tests/support/hvd_conformance.py for perseus.tensorflow.horovod, called as a Horovod user calls it (eager),
compared with numpy. Prints `REPORT {json}`: per row key, "ok" or what differed / was raised."""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))

import tensorflow as tf  # noqa: E402

import hvd_conformance as C  # noqa: E402
import perseus.tensorflow.horovod as hvd  # noqa: E402


def run(row: C.Row, rank: int):
    tensor = tf.constant(C.base(rank, row.dtype).astype(row.dtype))
    parts = set(row.variant.split("_"))
    if "inplace" in parts:  # broadcast_: tf.Variables, assigned in place
        args = [tf.Variable(tensor)]
        getattr(hvd, C.function_name(row))(args, **C.call_kwargs(row, hvd))
        outputs = [v.read_value() for v in args]
    else:
        outputs = C.call_row(row, hvd, tensor, tf.identity)
    return [o.numpy() for o in outputs], [o.dtype.name for o in outputs]


def main() -> None:
    hvd.init()
    rank = hvd.rank()
    report = C.run_rows(C.universe(C.BINDINGS["tensorflow"]), rank, lambda row: run(row, rank))
    print("REPORT " + json.dumps({"rank": rank, "rows": report}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
