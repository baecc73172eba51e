"""One rank of a device-buffer test job (tests/engine/test_engine_device.py): prints `REPORT {json}` lines.
NCCL and the CUDA runtime come from the nvidia/ packages on sys.path (PYTHONPATH names the folder of
recipes/nccl/fetch.sh), as from a pip install."""

import array
import json
import sys

from perseus import engine


def report(**fields):
    print("REPORT " + json.dumps(fields), flush=True)


def case_report():
    report(rank=0, device=engine.device_report())


def case_no_device():
    eng = engine.Engine.from_environment()
    found = engine.device_report()
    if found["device_count"] > 0:  # a GPU machine: this case is for machines without one
        report(rank=eng.rank, skipped="a CUDA device is visible")
        eng.close()
        return
    errors = []
    for name, submit in (("allreduce", lambda: eng.allreduce_device_async("grad", 0x1000, "float32", (256,), 0)),
                         ("broadcast", lambda: eng.broadcast_device_async("w", 0x1000, "float16", (8,), 0, root=0))):
        try:
            submit().wait()
            errors.append([name, None, "submitted without a device"])
        except engine.EngineError as e:
            errors.append([name, type(e).__name__, str(e)])
    buf = array.array("f", [float(eng.rank + 1)] * 4)  # the engine goes on with host buffers
    eng.allreduce("host", buf)
    report(rank=eng.rank, errors=errors, host=list(buf), nccl_version=found["nccl_version"],
           cuda_message=found["cuda_message"])
    eng.close()


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
