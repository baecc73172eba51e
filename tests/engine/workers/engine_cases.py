"""One rank of an engine test job: runs the case named in argv[1] with the framework-free handle and prints
`REPORT {json}` lines (no torch, no numpy). Numbers come from perseus.launch.detect()."""

import array
import json
import os
import signal
import struct
import sys
import time

from perseus import engine


def report(**fields):
    print("REPORT " + json.dumps(fields), flush=True)


def mpi_libraries():
    """The MPI libraries this process has mapped (the job's own: a plugin loads it, no wheel carries one)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/libmpi" in line}
    return sorted(p for p in paths if os.path.basename(p).startswith(("libmpi.so", "libmpich.so")))


def value(rank, i):
    # x10 (the gradient scale) lands within fp16's rounding of an integer: fp16 on the wire gives exact
    # integer sums whatever the reduction order, fp32 keeps the 0.0001 (see tests/engine/test_engine_runs.py)
    return float(rank + 1) + 0.0001 + float(i % 4)


def case_allreduce(eng, rank, size):
    big = 1536 * 1024  # 6 MiB of fp32: partitioned into slices by automatic fusion
    tensors = {"t/small": array.array("f", [value(rank, i) for i in range(10)]),
               "t/big": array.array("f", [value(rank, i) for i in range(big)]),
               "t/mid": array.array("f", [value(rank, i) for i in range(1000)])}
    order = sorted(tensors) if rank % 2 == 0 else sorted(tensors, reverse=True)  # orders differ by rank
    op = os.environ["TEST_OP"]
    handles = [(name, eng.allreduce_async(name, tensors[name], op=op)) for name in order]
    for _, h in handles:
        h.wait()
    results = {name: [t[0], t[1], t[2], t[3], t[len(t) - 1]] for name, t in tensors.items()}
    # every element of the big tensor: its four distinct values only
    distinct = sorted(set(tensors["t/big"][i] for i in range(0, len(tensors["t/big"]), 997)))
    report(rank=rank, results=results, big_distinct=distinct, info=eng.info(), mpi_libraries=mpi_libraries())


def case_pipeline(eng, rank, size):
    """Many tensors of odd sizes, some above the 2 MiB partition, in one stream: many slices in flight."""
    sizes = [1, 3, 1048577, 7, 2 * 1048576 + 13, 65537, 5, 333333] + [1 + 977 * k for k in range(24)]
    base = array.array("f", [value(rank, i) for i in range(4)])
    tensors = {"p/{}".format(k): (base * (n // 4 + 1))[:n] for k, n in enumerate(sizes)}
    handles = [eng.allreduce_async(name, t, op="average") for name, t in tensors.items()]
    for h in handles:
        h.wait()
    # the first elements, and whether the rest repeats them (a slice scattered to a wrong offset breaks it)
    results = {name: [list(t[:4]), t[4:] == t[:-4]] for name, t in tensors.items()}
    report(rank=rank, results=results, info=eng.info())


def case_broadcast(eng, rank, size):
    root = size - 1
    buf = array.array("d", [float(rank * 100 + i) for i in range(5)])
    eng.broadcast("bcast", buf, root=root)
    raw = bytearray(struct.pack("<4e", *[rank + 0.5] * 4))  # fp16 raw bytes
    eng.broadcast("bcast16", raw, root=0, dtype="float16")
    report(rank=rank, values=list(buf), half=list(struct.unpack("<4e", raw)))


def case_allgather(eng, rank, size):
    rows = rank + 1 if rank != 1 else 0  # rank 1 contributes no rows
    data = array.array("i", [rank * 10 + j for j in range(rows * 3)])
    gathered, dims = eng.allgather("gather", data, shape=(rows, 3))
    eng.barrier("after-gather")
    report(rank=rank, dims=dims, values=list(array.array("i", bytes(gathered))))


def case_mismatch(eng, rank, size):
    buf = array.array("f", [1.0] * (5 if rank == 1 else 4))
    try:
        eng.allreduce("w", buf)
        report(rank=rank, error=None)
    except engine.MismatchError as exc:
        after = array.array("f", [1.0] * 3)
        eng.allreduce("after", after)  # the engine keeps working
        report(rank=rank, error=str(exc), after=list(after))


def case_halfsum(eng, rank, size):
    """fp16 and bf16 buffers summed in Gloo (each addition in fp32, one rounding), average of fp16."""
    half = bytearray(struct.pack("<3e", 0.5 * (rank + 1), 1000.0, -2.0))
    eng.allreduce("h16", half, dtype="float16")
    avg = bytearray(struct.pack("<2e", float(rank), 3.0))
    eng.allreduce("h16avg", avg, op="average", dtype="float16")
    # bf16 = the upper 16 bits of fp32: 1.5 * (rank + 1) and 256 are exact
    bf = bytearray(b"".join(struct.pack("<f", v)[2:] for v in (1.5 * (rank + 1), 256.0)))
    eng.allreduce("bf16", bf, dtype="bfloat16")
    bf_values = [struct.unpack("<f", b"\0\0" + bytes(bf[i:i + 2]))[0] for i in (0, 2)]
    report(rank=rank, half=list(struct.unpack("<3e", half)), avg=list(struct.unpack("<2e", avg)), bf16=bf_values)


def case_nancheck(eng, rank, size):
    buf = array.array("f", [1.0, float("inf") if rank == 1 else 2.0, 3.0])
    try:
        eng.allreduce("grad/with-inf", buf)
        report(rank=rank, error=None)
    except engine.NonFiniteError as exc:
        report(rank=rank, error=str(exc))


def case_stall(eng, rank, size):
    """Rank 0 submits a collective rank 1 never submits: every rank gets the stall error after the timeout."""
    start = time.monotonic()
    if rank == 0:
        try:
            eng.allreduce("only-rank0", array.array("f", [1.0]))
            report(rank=rank, error=None)
        except engine.MismatchError as exc:
            report(rank=rank, error=str(exc), seconds=time.monotonic() - start)
        with open(os.environ["PERSEUS_TEST_STALL_MARKER"], "w") as marker:
            marker.write("rank 0 gave up")
    else:
        # submit the next collective only once rank 0 has given up on the first one: a fixed sleep raced with
        # rank 0's timeout for the next collective on a loaded machine
        deadline = time.monotonic() + 120
        while not os.path.exists(os.environ["PERSEUS_TEST_STALL_MARKER"]):
            if time.monotonic() > deadline:
                raise SystemExit("rank 0 never reported the stall")
            time.sleep(0.05)
        report(rank=rank, error=None)
    after = array.array("f", [1.0])
    eng.allreduce("after-stall", after)
    print("AFTER", rank, after[0], flush=True)


def case_launcher(eng, rank, size):
    """An allreduce under whatever launcher's variables started this process; reports what detect() saw."""
    from perseus import launch

    env = launch.detect()
    buf = array.array("f", [float(rank + 1)] * 4)
    eng.allreduce("launcher", buf, op="sum")
    report(rank=rank, size=size, launcher=env.launcher, master=env.master_addr, values=list(buf))


def case_lost_rank(eng, rank, size):
    """Rank 1 dies (TEST_SIGNAL=KILL) or freezes (STOP) while rank 0 waits in an allreduce."""
    buf = array.array("f", [1.0] * 1000)
    eng.allreduce("warm", buf)
    if rank == 1:
        os.kill(os.getpid(), getattr(signal, "SIG" + os.environ["TEST_SIGNAL"]))
        time.sleep(600)
    start = time.monotonic()
    try:
        eng.allreduce("lost", buf)
    except engine.CommunicationError as exc:
        report(rank=rank, seconds=time.monotonic() - start, error=str(exc))
        sys.exit(3)
    report(rank=rank, seconds=time.monotonic() - start, error=None)


def case_downsample(eng, rank, size):
    """Gossip downsampling (n=4, momentum 1) of a constant gradient g_i = (rank + 1) * (i + 1), 8 calls: element i
    travels at the calls k with k % 4 == i % 4, carrying every gradient since its last send; the wire carries
    1 in 4 elements (fp32 with DTYPE=1). Also a 2-element tensor: calls 2, 3 (mod 4) send nothing."""
    n, numel = 4, 10
    received = []
    for k in range(8):
        grad = array.array("f", [float((rank + 1) * (i + 1)) for i in range(numel)])
        eng.allreduce_downsampled_async("g", grad, n, 1.0, op="sum").wait()
        received.append(list(grad))
        tiny = array.array("f", [1.0, 2.0])
        eng.allreduce_downsampled_async("tiny", tiny, n, 1.0, op="sum").wait()
    nbytes, calls = eng.wire_bytes("all", "float32")
    report(rank=rank, received=received, wire_bytes=nbytes, wire_calls=calls)
def offline_step(eng, rank, size, step):
    """One training-like step: three gradients submitted in a rank-dependent order, then waited for, and a
    SyncBN-like allreduce waited for at once. Returns the sums (expected: see test_engine_offline.py)."""
    grads = {"g/a": array.array("f", [float(rank + step)] * 7), "g/b": array.array("f", [1.0] * 300),
             "g/c": array.array("f", [float(rank)] * 5000)}
    order = sorted(grads) if rank % 2 == 0 else sorted(grads, reverse=True)
    handles = [eng.allreduce_async(name, grads[name]) for name in order]
    for h in handles:
        h.wait()
    stats = array.array("f", [float(rank)] * 2)
    eng.allreduce("bn/stats", stats, op="average")
    return [grads["g/a"][0], grads["g/b"][299], grads["g/c"][4999], stats[1]]


def case_offline(eng, rank, size):
    sums = [offline_step(eng, rank, size, step) for step in range(3)]
    switched = eng.info()
    sums += [offline_step(eng, rank, size, step) for step in range(3, 8)]
    report(rank=rank, sums=sums, switched=switched, info=eng.info())


def case_offline_leave(eng, rank, size):
    """After the switch rank 1 submits g/a with another shape while rank 0 runs a step of the plan."""
    for step in range(3):
        offline_step(eng, rank, size, step)
    errors = []
    try:
        if rank == 1:
            eng.allreduce("g/a", array.array("f", [1.0] * 8))
        else:
            offline_step(eng, rank, size, 3)
    except engine.EngineError as exc:
        errors.append([type(exc).__name__, str(exc)])
    try:
        eng.close()
    except engine.EngineError as exc:
        errors.append([type(exc).__name__, str(exc)])
    report(rank=rank, offline=True, errors=errors)
    sys.exit(0)


def case_offline_phases(eng, rank, size):
    """Training, an evaluation phase (other collectives: every rank leaves the plan together), training."""
    sums = [offline_step(eng, rank, size, step) for step in range(3)]
    evals = []
    for step in range(4):
        acc = array.array("d", [float(rank + step)])
        handle = eng.allreduce_async("eval/acc", acc)
        rows, _ = eng.allgather("eval/rows", array.array("i", [rank, step]), shape=(1, 2))
        handle.wait()
        evals.append([acc[0], list(array.array("i", bytes(rows)))])
    in_eval = eng.info()
    sums += [offline_step(eng, rank, size, step) for step in range(3, 6)]
    report(rank=rank, sums=sums, evals=evals, in_eval=in_eval, info=eng.info())


def case_store_served(eng, rank, size):
    """Under perseusrun: the store is perseusrun's; nothing listens on PERSEUS_MASTER_PORT (no rank served it)."""
    import socket

    probe = socket.socket()
    try:
        probe.connect(("127.0.0.1", int(os.environ["PERSEUS_MASTER_PORT"])))
        master_port_served = True
    except OSError:
        master_port_served = False
    finally:
        probe.close()
    buf = array.array("f", [float(rank + 1)] * 3)
    eng.allreduce("x", buf)
    report(rank=rank, store=os.environ.get("PERSEUS_STORE_ADDR"), master_port_served=master_port_served,
           value=buf[0])


def main():
    case = sys.argv[1]  # ModelArts' own arguments may follow: perseus.launch.detect() reads them
    eng = engine.Engine.from_environment()
    rank, size = eng.rank, eng.size
    globals()["case_" + case](eng, rank, size)
    eng.close()


if __name__ == "__main__":
    main()
