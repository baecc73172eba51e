"""Collectives matched by name, as Horovod's coordinator matches them: each case returns what this rank saw;
tests/torch/test_hvd_name_matching.py checks it against Horovod's semantics."""

import torch

import perseus.torch.horovod as hvd
from hvd_cases import check, results
from worker_common import emit

hvd.init()
r, n = hvd.rank(), hvd.size()


def rows(t):
    return t.detach().to(torch.float64).reshape(-1).tolist()


@check("issued_on_either_side_of_a_barrier")
def _():
    # rank 0 submits before a barrier, the others after it (Horovod's duplicate-name tests do this)
    mine = torch.full((3,), float(r + 1))
    handle = None
    if r == 0:
        handle = hvd.allreduce_async(mine, name="across.barrier", op=hvd.Sum)
    hvd.barrier()
    if r != 0:
        handle = hvd.allreduce_async(mine, name="across.barrier", op=hvd.Sum)
    hvd.barrier()
    return rows(hvd.synchronize(handle))


@check("duplicate_name_in_flight")
def _():
    # a second collective under a name still in flight is refused on the rank that submits it
    t = torch.ones(4)
    refused = []
    handles = []
    for turn in range(n):
        if r == turn:
            handles.append(hvd.allreduce_async(t, name="in.flight", op=hvd.Sum))
            try:
                hvd.allreduce_async(t, name="in.flight", op=hvd.Sum)
            except ValueError as error:
                refused.append(str(error))
        hvd.barrier()
    got = rows(hvd.synchronize(handles[0]))
    again = rows(hvd.allreduce(t, name="in.flight", op=hvd.Sum))  # synchronized: the name is free again
    return {"refused": refused, "sum": got, "again": again}


@check("a_long_name_is_free_again_after_synchronize")
def _():
    # names longer than a record's 56 name bytes are held and released whole
    name = "long." + "x" * 80
    return [rows(hvd.allreduce(torch.ones(2), name=name, op=hvd.Sum)) for _ in range(2)]


@check("submitted_in_different_orders")
def _():
    a, b = torch.full((2,), float(r + 1)), torch.full((5,), 10.0 * (r + 1))
    if r % 2 == 0:
        ha = hvd.allreduce_async(a, name="order.a", op=hvd.Sum)
        hb = hvd.allreduce_async(b, name="order.b", op=hvd.Sum)
    else:
        hb = hvd.allreduce_async(b, name="order.b", op=hvd.Sum)
        ha = hvd.allreduce_async(a, name="order.a", op=hvd.Sum)
    return {"a": rows(hvd.synchronize(ha)), "b": rows(hvd.synchronize(hb))}


@check("mixed_kinds_in_different_orders")
def _():
    ops = {
        "gather": lambda: hvd.allgather_async(torch.full((1, 2), float(r)), name="mixed.gather"),
        "bcast": lambda: hvd.broadcast_async(torch.full((3,), float(r + 7)), root_rank=n - 1, name="mixed.bcast"),
        "sum": lambda: hvd.allreduce_async(torch.full((2,), 1.0), name="mixed.sum", op=hvd.Sum),
    }
    order = ["gather", "bcast", "sum"] if r == 0 else ["sum", "gather", "bcast"]
    handles = {key: ops[key]() for key in order}
    return {key: rows(hvd.synchronize(handles[key])) for key in sorted(handles)}


@check("polling_lets_a_deferred_collective_run")
def _():
    # rank 0 polls in a loop for a collective that rank 1 submits only after one rank 0 has not reached yet
    import time
    deadline = time.time() + 60
    a, b = torch.full((2,), float(r + 1)), torch.full((3,), 5.0)
    if r == 0:
        ha = hvd.allreduce_async(a, name="poll.a", op=hvd.Sum)
        while not hvd.poll(ha) and time.time() < deadline:
            time.sleep(0.01)
        hb = hvd.allreduce_async(b, name="poll.b", op=hvd.Sum)
    else:
        hb = hvd.allreduce_async(b, name="poll.b", op=hvd.Sum)
        ha = hvd.allreduce_async(a, name="poll.a", op=hvd.Sum)
        while not hvd.poll(ha) and time.time() < deadline:
            time.sleep(0.01)
    return {"a": rows(hvd.synchronize(ha)), "b": rows(hvd.synchronize(hb))}


@check("another_thread_submits_what_the_others_wait_for")
def _():
    # rank 0's main thread waits for "thread.w" while its second thread is about to submit "thread.p", which
    # rank 1 waits for before it submits "thread.w": the ranks look stalled for a moment, and are not
    import threading
    import time
    got = {}
    if r == 0:
        hw = hvd.allreduce_async(torch.full((2,), 1.0), name="thread.w", op=hvd.Sum)

        def second():
            time.sleep(0.1)
            got["p"] = rows(hvd.synchronize(hvd.allreduce_async(torch.full((3,), 1.0), name="thread.p", op=hvd.Sum)))
        thread = threading.Thread(target=second)
        thread.start()
        got["w"] = rows(hvd.synchronize(hw))
        thread.join()
    else:
        got["p"] = rows(hvd.synchronize(hvd.allreduce_async(torch.full((3,), 1.0), name="thread.p", op=hvd.Sum)))
        got["w"] = rows(hvd.synchronize(hvd.allreduce_async(torch.full((2,), 1.0), name="thread.w", op=hvd.Sum)))
    return got


@check("waiting_for_what_no_other_rank_submits")
def _():
    # rank 0 waits for a collective only it submitted while the others wait in a barrier: every rank raises
    # (instead of hanging), then they go on together
    error = None
    try:
        if r == 0:
            hvd.synchronize(hvd.allreduce_async(torch.ones(1), name="only.rank0"))
        else:
            hvd.barrier()
    except hvd.HorovodCollectiveError as raised:
        error = str(raised)
    hvd.barrier()
    return {"error": error, "after": rows(hvd.allreduce(torch.ones(1), op=hvd.Sum, name="after.stall"))}


@check("join_with_named_async")
def _():
    # Horovod's join pattern: the last rank joins at once, the others allreduce named tensors first
    if r == n - 1:
        return {"join": hvd.join()}
    ha = hvd.allreduce_async(torch.full((3,), 2.0), name="join.a", op=hvd.Sum)
    hb = hvd.allreduce_async(torch.full((4,), 3.0), name="join.b", op=hvd.Sum)
    return {"a": rows(hvd.synchronize(ha)), "b": rows(hvd.synchronize(hb)), "join": hvd.join()}


@check("joined_rank_keeps_what_it_submitted_before_joining")
def _():
    # rank 0 submits "jd" while the others are in a barrier (deferred), then joins; the others submit "jd" after the
    # barrier: rank 0's own 5s take part, not a joined rank's zeros
    handle = None
    if r == 0:
        handle = hvd.allreduce_async(torch.full((3,), 5.0), name="jd", op=hvd.Sum)
    hvd.barrier()
    if r == 0:
        last = hvd.join()
        return {"sum": rows(hvd.synchronize(handle)), "join": last}
    got = rows(hvd.allreduce(torch.full((3,), 7.0), name="jd", op=hvd.Sum))
    return {"sum": got, "join": hvd.join()}


emit(results)
hvd.shutdown()
