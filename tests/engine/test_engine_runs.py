"""The native engine in real jobs of 2 and 4 processes under perseusrun, through the framework-free Python
handle (perseus.engine; no torch, no numpy in the ranks): allreduce sum/average with PERSEUS_ALLREDUCE_DTYPE
0/1/2 (2 as 2 "nodes" x 2 ranks: perseusrun -H HOSTNAME:2,IP:2), broadcast, allgather with different
first dimensions, a mismatch error, a rank lost mid-collective."""

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from engine_helpers import bare, f32, half, perseusrun, reports
from support.spellings import NANCHECK_SPELLINGS

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

SCALE = 10.0


def expected(values, dtype, average, nodes=None):
    """The wire policy's result for per-rank inputs `values` (fp32 model of the C++ pipeline)."""
    size = len(values)
    div = size if average else 1
    if dtype == 1:
        total = 0.0
        for v in values:
            total = f32(total + v)
        return f32(total / div) if average else total
    if dtype == 0 or nodes is None:
        total = sum(half(f32(v * SCALE)) for v in values)  # integers after rounding: exact in any order
        return f32(half(total) * f32(1.0 / (SCALE * div)))
    # dtype 2, two levels: fp32 sum inside each node, fp16 between the node leaders
    total = 0.0
    for node in nodes:
        inside = 0.0
        for r in node:
            inside = f32(inside + values[r])
        total += half(f32(inside * SCALE))
    return f32(half(total) * f32(1.0 / (SCALE * div)))


def two_local_hosts(first=2, second=2):
    """Two names of this machine for perseusrun -H (it refuses loopback names in a multi-host job): its host
    name and its first non-loopback address, with `first` and `second` slots: 2 "nodes", all local."""
    out = subprocess.run(["hostname", "-I"], stdout=subprocess.PIPE, universal_newlines=True).stdout.split()
    addresses = [a for a in out if ":" not in a and not a.startswith("127.")]
    if not addresses:
        pytest.fail("this machine has no non-loopback IPv4 address (hostname -I) to fake a second node with")
    return "{}:{},{}:{}".format(socket.gethostname(), first, addresses[0], second)


def value(rank, i):
    return f32(float(rank + 1) + 0.0001 + float(i % 4))


@pytest.mark.parametrize("np,dtype,op,streams", [(2, 0, "average", 1), (2, 1, "sum", 1), (4, 0, "sum", 1),
                                                 (4, 1, "average", 1), (4, 0, "average", 4)])
def test_allreduce_one_level(engine_library, np, dtype, op, streams):
    proc = perseusrun(engine_library, np, "allreduce", env={"PERSEUS_ALLREDUCE_DTYPE": str(dtype), "TEST_OP": op,
                                                            "PERSEUS_ALLREDUCE_STREAMS": str(streams)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert [r["rank"] for r in found] == list(range(np))
    for r in found:
        info = r["info"]
        assert (info["size"], info["hierarchical"], info["streams"]) == (np, 0, streams)
        assert info["intra_fp16"] == info["inter_fp16"] == (1 if dtype == 0 else 0)
        # one node: every stream's group of all ranks exchanges through shared memory
        assert info["shared_memory_groups"] == info["node_groups"] == streams
        for name, got in r["results"].items():
            n = {"t/small": 10, "t/mid": 1000, "t/big": 1536 * 1024}[name]
            for k, i in enumerate([0, 1, 2, 3, n - 1]):
                want = expected([value(q, i) for q in range(np)], dtype, op == "average")
                if dtype == 1:  # fp32: the ring's summation order and x * (1/size) move the last bit
                    assert got[k] == pytest.approx(want, rel=1e-6), (name, i, got[k], want)
                else:
                    assert f32(got[k]) == want, (name, i, got[k], want)
        # fp16 on the wire loses the 0.0001 of every input, fp32 keeps it
        lost = expected([value(q, 0) for q in range(np)], 0, op == "average")
        kept = expected([value(q, 0) for q in range(np)], 1, op == "average")
        assert lost != kept
        # sampled elements of the big tensor (every slice): each is one of the four expected values
        wants = [expected([value(q, i) for q in range(np)], dtype, op == "average") for i in range(4)]
        for got in r["big_distinct"]:
            assert any(got == pytest.approx(w, rel=1e-6 if dtype == 1 else 0) for w in wants), (got, wants)
        # (whether these three tensors share a fused group is the planner's choice for their sizes: at 2 MiB
        # partitions every group here is one unit, reduced in place; test_pipelined_slices_of_odd_sizes
        # asserts fusion)


def private_dev_shm(mib):
    """A command prefix that runs the rest in a mount namespace of its own with a `mib` MiB /dev/shm."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to give the job a /dev/shm of its own")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            "mount -t tmpfs -o size={}m tmpfs /dev/shm && exec \"$@\"".format(mib), "sh"]


@pytest.mark.parametrize("mib,shared", [(6, False), (64, True)])
def test_one_node_falls_back_to_tcp_when_dev_shm_is_small(engine_library, mib, shared):
    """A 2-rank group's segment takes 4 MiB; the engine makes it only if half of /dev/shm stays free: not in
    6 MiB (the job runs over loopback TCP instead, with the same results), in 64 MiB it does."""
    proc = perseusrun(engine_library, 2, "allreduce", env={"PERSEUS_ALLREDUCE_DTYPE": "0", "TEST_OP": "sum",
                                                           "PERSEUS_ALLREDUCE_STREAMS": "1"}, wrap=private_dev_shm(mib))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    for r in found:
        assert r["info"]["node_groups"] == 1, proc.stderr[-3000:]
        assert r["info"]["shared_memory_groups"] == (1 if shared else 0), proc.stderr[-3000:]
        for name, got in r["results"].items():
            n = {"t/small": 10, "t/mid": 1000, "t/big": 1536 * 1024}[name]
            for k, i in enumerate([0, 1, 2, 3, n - 1]):
                assert f32(got[k]) == expected([value(q, i) for q in range(2)], 0, False), (name, i)


@pytest.mark.parametrize("shm_disable", ["0", "1"])
def test_allreduce_two_levels_dtype2(engine_library, shm_disable):
    """The same bits whether the node's ranks exchange through shared memory or loopback TCP."""
    proc = perseusrun(engine_library, 4, "allreduce", hosts=two_local_hosts(),
                      env={"PERSEUS_ALLREDUCE_DTYPE": "2", "TEST_OP": "average", "PERSEUS_SHM_DISABLE": shm_disable})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == 4
    for r in found:
        info = r["info"]
        assert (info["num_nodes"], info["local_size"], info["node"]) == (2, 2, r["rank"] // 2)
        assert (info["hierarchical"], info["intra_fp16"], info["inter_fp16"]) == (1, 0, 1)
        assert info["node_groups"] == 2 * info["streams"]  # the reduce-scatter's and the allgather's
        assert info["shared_memory_groups"] == (0 if shm_disable == "1" else info["node_groups"])
        for name, got in r["results"].items():
            n = {"t/small": 10, "t/mid": 1000, "t/big": 1536 * 1024}[name]
            for k, i in enumerate([0, 1, 2, 3, n - 1]):
                want = expected([value(q, i) for q in range(4)], 2, True, nodes=[[0, 1], [2, 3]])
                assert f32(got[k]) == want, (name, i, got[k], want)


@pytest.mark.parametrize("first,second", [(2, 1), (3, 3)])
def test_allreduce_two_levels_dtype2_other_node_shapes(engine_library, first, second):
    """Unequal nodes (2 + 1 ranks) take the node leaders' path (reduce, leaders' allreduce, broadcast); 2 x 3
    the equal nodes' path with a ring reduce-scatter over three ranks. Inputs are exact in fp32 and fp16 after
    the scale, so every summation order gives the same bits."""
    np = first + second
    proc = perseusrun(engine_library, np, "allreduce", hosts=two_local_hosts(first, second),
                      env={"PERSEUS_ALLREDUCE_DTYPE": "2", "TEST_OP": "sum"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == np
    nodes = [list(range(first)), list(range(first, np))]
    for r in found:
        info = r["info"]
        assert (info["num_nodes"], info["hierarchical"], info["intra_fp16"], info["inter_fp16"]) == (2, 1, 0, 1)
        for name, got in r["results"].items():
            n = {"t/small": 10, "t/mid": 1000, "t/big": 1536 * 1024}[name]
            for k, i in enumerate([0, 1, 2, 3, n - 1]):
                assert f32(got[k]) == expected([value(q, i) for q in range(np)], 2, False, nodes=nodes), (name, i)


def test_allreduce_mode1_fp16_two_levels(engine_library):
    proc = perseusrun(engine_library, 4, "allreduce", hosts=two_local_hosts(),
                      env={"PERSEUS_ALLREDUCE_DTYPE": "0", "PERSEUS_ALLREDUCE_MODE": "1", "TEST_OP": "sum",
                           "PERSEUS_ALLREDUCE_STREAMS": "2"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for r in reports(proc.stdout):
        info = r["info"]
        assert (info["hierarchical"], info["intra_fp16"], info["inter_fp16"], info["streams"]) == (1, 1, 1, 2)
        for k, i in enumerate([0, 1, 2, 3]):
            assert f32(r["results"]["t/mid"][k]) == expected([value(q, i) for q in range(4)], 0, False)


@pytest.mark.parametrize("np,dtype", [(4, 2), (2, 0)])
def test_pipelined_slices_of_odd_sizes(engine_library, np, dtype):
    """One stream, 32 tensors of odd sizes (three above 4 MiB, so above the 2 MiB partition): the stream's pipeline holds several slices
    at once; every element is the wire policy's result, in two levels (2 x 2 nodes) and in one."""
    proc = perseusrun(engine_library, np, "pipeline", hosts=two_local_hosts() if np == 4 else None,
                      env={"PERSEUS_ALLREDUCE_DTYPE": str(dtype), "PERSEUS_ALLREDUCE_STREAMS": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == np
    nodes = [[0, 1], [2, 3]] if np == 4 else None
    for r in found:
        assert r["info"]["hierarchical"] == (1 if np == 4 else 0)
        # how many groups fuse depends on which submissions each negotiation cycle catches (faster cycles, as
        # over shared memory, catch fewer at once); the 24 small tensors never all go alone
        assert r["info"]["fused_groups"] >= 1
        for name, (first, periodic) in r["results"].items():
            assert periodic, name
            for i, got in enumerate(first):
                assert f32(got) == expected([value(q, i) for q in range(np)], dtype, True, nodes=nodes), (name, i)


@pytest.mark.parametrize("np", [2, 4])
def test_broadcast(engine_library, np):
    proc = perseusrun(engine_library, np, "broadcast")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == np
    for r in found:
        assert r["values"] == [float((np - 1) * 100 + i) for i in range(5)]
        assert r["half"] == [0.5] * 4


@pytest.mark.parametrize("np", [2, 4])
def test_allgather_variable_first_dimension(engine_library, np):
    proc = perseusrun(engine_library, np, "allgather")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    dims = [r + 1 if r != 1 else 0 for r in range(np)]
    want = [r * 10 + j for r in range(np) for j in range(dims[r] * 3)]
    found = reports(proc.stdout)
    assert len(found) == np
    for r in found:
        assert r["dims"] == dims
        assert r["values"] == want


def test_shape_mismatch_same_error_on_every_rank(engine_library):
    proc = perseusrun(engine_library, 2, "mismatch")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == 2
    assert found[0]["error"] == found[1]["error"]
    message = found[0]["error"]
    assert "collective 'w' does not match across ranks" in message
    assert "rank 0 submitted allreduce float32[4] sum" in message
    assert "rank 1 submitted allreduce float32[5] sum" in message
    assert found[0]["after"] == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("how", ["KILL", "STOP"])
def test_lost_rank_ends_rank0_within_gloo_timeout(engine_library, how):
    """Bare processes (no launcher to kill the others): rank 1 is SIGKILLed (its sockets close: rank 0 fails at
    once) or SIGSTOPped (silent: rank 0 fails after GLOO_TIMEOUT_SECONDS=5)."""
    procs = bare(engine_library, 2, "lost_rank", env={"GLOO_TIMEOUT_SECONDS": "5", "TEST_SIGNAL": how})
    start = time.monotonic()
    try:
        out, err = procs[0].communicate(timeout=60)
        took = time.monotonic() - start
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait()
    assert procs[0].returncode == 3, out + err
    found = [r for r in (l for l in out.splitlines()) if r.startswith("REPORT ")]
    assert found, out + err
    assert "GLOO_TIMEOUT_SECONDS=5" in found[0]
    assert took < 5 + 20  # start-up + rendezvous + at most the timeout
    if how == "STOP":
        import json
        assert json.loads(found[0][len("REPORT "):])["seconds"] >= 4.0


def test_killed_rank_ends_the_perseusrun_job_nonzero(engine_library):
    import psutil

    token = "lost_rank-" + str(time.monotonic_ns())  # marks this job's ranks on their command lines
    start = time.monotonic()
    proc = perseusrun(engine_library, 2, "lost_rank", env={"GLOO_TIMEOUT_SECONDS": "5", "TEST_SIGNAL": "KILL",
                                                            "TEST_TOKEN": token})
    assert proc.returncode != 0
    assert time.monotonic() - start < 60
    left = [p for p in psutil.process_iter(["environ", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and (p.info["environ"] or {}).get("TEST_TOKEN") == token]
    assert left == [], "processes left behind: {}".format(left)


def test_fp16_bf16_buffers_summed_in_gloo(engine_library):
    proc = perseusrun(engine_library, 4, "halfsum")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == 4
    for r in found:
        assert r["half"] == [5.0, 4000.0, -8.0]
        assert r["avg"] == [1.5, 3.0]
        assert r["bf16"] == [15.0, 1024.0]


@pytest.mark.parametrize("spelling", NANCHECK_SPELLINGS)
def test_nancheck_fails_every_rank(engine_library, spelling):
    """Under the declared name and under every alias (the manual's PERSEUS_ALLREDUCE_NANHECK) alike."""
    proc = perseusrun(engine_library, 2, "nancheck", env={spelling: "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == 2 and found[0]["error"] == found[1]["error"]
    assert "PERSEUS_ALLREDUCE_NANCHECK" in found[0]["error"] and "'grad/with-inf'" in found[0]["error"]


def test_collective_missing_on_a_rank_fails_after_the_timeout(engine_library, tmp_path):
    proc = perseusrun(engine_library, 2, "stall", env={"GLOO_TIMEOUT_SECONDS": "3",
                                                      "PERSEUS_TEST_STALL_MARKER": str(tmp_path / "stalled")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert "was submitted by ranks 0 but not by ranks 1 within GLOO_TIMEOUT_SECONDS=3" in found[0]["error"]
    assert 3.0 <= found[0]["seconds"] < 10
    assert proc.stdout.count("AFTER") == 2 and "AFTER 0 2.0" in proc.stdout and "AFTER 1 2.0" in proc.stdout


def test_gossip_downsampling_sends_one_element_in_n_and_loses_nothing_with_momentum_1(engine_library):
    """perseus_engine_allreduce_downsampled: gossip downsampling in the engine."""
    proc = perseusrun(engine_library, 2, "downsample", env={"PERSEUS_ALLREDUCE_DTYPE": "1",
                                                             "PERSEUS_ALLREDUCE_FUSION": "0"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == 2
    for r in found:
        for k, got in enumerate(r["received"]):
            for i, v in enumerate(got):
                if i % 4 != k % 4:
                    assert v == 0.0  # not sent this call: its gradient waits in the residual
                else:
                    since = k + 1 if k < 4 else 4  # calls gathered since its last send (momentum 1)
                    assert v == 3.0 * (i + 1) * since, (k, i, v)  # both ranks' gradients: 1 + 2 = 3
        # 8 calls of 10 elements send 3,3,2,2 per cycle of 4 (10 bytes of 40 fp32 per call on average); the
        # 2-element tensor sends 1,1,0,0: 2 x (3+3+2+2) + 2 x (1+1) = 24 elements (empty slices send nothing)
        assert r["wire_bytes"] == 24 * 4
