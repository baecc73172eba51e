"""The files an elastic test worker writes, which tests/support/elastic.py reads (standard library only: the
torch and TensorFlow workers import it). OUT_DIR/pid.<host>_<slot>: the worker's pid (a test kills it by it);
OUT_DIR/progress: `step size`, written by rank 0, replaced atomically; ELASTIC_TEST_HOLD=8[,16]: the steps after
which every rank waits until OUT_DIR/go.<step> exists."""

import os
from typing import Set


def hold_steps() -> Set[int]:
    return {int(n) for n in os.environ.get("ELASTIC_TEST_HOLD", "").split(",") if n}


def write_pid(out: str) -> None:
    worker = os.environ.get("PERSEUS_ELASTIC_WORKER", "static").replace(":", "_")
    with open(os.path.join(out, "pid." + worker), "w") as f:
        f.write(str(os.getpid()))


def write_progress(out: str, rank: int, step: int, size: int) -> None:
    if rank == 0:
        with open(os.path.join(out, "progress.tmp"), "w") as f:
            f.write("{} {}\n".format(step, size))
        os.replace(os.path.join(out, "progress.tmp"), os.path.join(out, "progress"))


def released(out: str, step: int) -> bool:
    return os.path.exists(os.path.join(out, "go.{}".format(step)))
