"""perseus.torch.horovod's collectives take the parameters Horovod 0.28's torch API takes, in its order (so
positional and keyword calls of Horovod code run unchanged); capability queries answer for perseus's engine;
an unregistered process set is refused naming hvd.add_process_set. Single process, no job needed."""

import inspect
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

pytest.importorskip("torch")

import perseus.torch.horovod as hvd  # noqa: E402

REDUCE = ["tensor", "average", "name", "op", "prescale_factor", "postscale_factor", "process_set"]
GROUPED = ["tensors"] + REDUCE[1:]
SCATTER = ["name", "op", "process_set", "prescale_factor", "postscale_factor"]

EXPECTED = {
    "allreduce": ["tensor", "average", "name", "compression", "op", "prescale_factor", "postscale_factor",
                  "process_set"],
    "allreduce_async": REDUCE, "allreduce_": REDUCE, "allreduce_async_": REDUCE,
    "grouped_allreduce": ["tensors", "average", "name", "compression", "op", "prescale_factor", "postscale_factor",
                          "process_set"],
    "grouped_allreduce_async": GROUPED, "grouped_allreduce_": GROUPED, "grouped_allreduce_async_": GROUPED,
    "sparse_allreduce_async": ["tensor", "name", "op", "process_set"],
    "allgather": ["tensor", "name", "process_set"], "allgather_async": ["tensor", "name", "process_set"],
    "grouped_allgather": ["tensors", "name", "process_set"],
    "grouped_allgather_async": ["tensors", "name", "process_set"],
    "broadcast": ["tensor", "root_rank", "name", "process_set"],
    "broadcast_async": ["tensor", "root_rank", "name", "process_set"],
    "broadcast_": ["tensor", "root_rank", "name", "process_set"],
    "broadcast_async_": ["tensor", "root_rank", "name", "process_set"],
    "alltoall": ["tensor", "splits", "name", "process_set"],
    "alltoall_async": ["tensor", "splits", "name", "process_set"],
    "reducescatter": ["tensor", "name", "compression"] + SCATTER[1:],
    "reducescatter_async": ["tensor"] + SCATTER,
    "grouped_reducescatter": ["tensors", "name", "compression"] + SCATTER[1:],
    "grouped_reducescatter_async": ["tensors"] + SCATTER,
    "join": ["device"], "barrier": ["process_set"], "poll": ["handle"], "synchronize": ["handle"],
    "broadcast_object": ["obj", "root_rank", "name", "process_set"],
    "broadcast_optimizer_state": ["optimizer", "root_rank", "model"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_signature_matches_horovod(name):
    assert list(inspect.signature(getattr(hvd, name)).parameters) == EXPECTED[name]


def test_defaults_match_horovod():
    assert inspect.signature(hvd.reducescatter).parameters["op"].default == hvd.Average
    assert inspect.signature(hvd.allreduce).parameters["process_set"].default is hvd.global_process_set


def test_horovod_exception_types():
    assert issubclass(hvd.HorovodInternalError, RuntimeError)
    assert issubclass(hvd.HostsUpdatedInterrupt, RuntimeError)
    assert issubclass(hvd.HorovodCollectiveError, hvd.HorovodInternalError)


_CAPABILITIES_PROBE = """
import json
import perseus.torch.horovod as hvd
from perseus.torch import _comm, _device
_comm.load_library()
report = _device.report()
print(json.dumps({"built": report["built"], "nccl_version": report["nccl_version"], "gloo": hvd.gloo_built(),
                  "ccl": hvd.ccl_built(), "ddl": hvd.ddl_built(), "rocm": hvd.rocm_built(), "mpi": hvd.mpi_built(),
                  "nccl": hvd.nccl_built(), "cuda": hvd.cuda_built()}))
"""


def test_capabilities_answer_for_perseus_engine():
    # its own process: the engine library loads once per process, and other tests load another one first
    import json
    import subprocess
    done = subprocess.run([sys.executable, "-c", _CAPABILITIES_PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["gloo"] is True
    assert found["ccl"] is False and found["ddl"] is False and found["rocm"] is False
    assert found["mpi"] is False  # MPI only bootstraps perseus; it never carries tensors
    assert isinstance(found["nccl"], int)
    assert found["nccl"] == (int(found["nccl_version"]) if found["built"] else 0)
    assert found["cuda"] == bool(found["built"])


def test_an_unregistered_process_set_is_refused_naming_add_process_set():
    other = hvd.ProcessSet([0])
    with pytest.raises(ValueError, match=r"hvd.allreduce: ProcessSet\(.*\) is not a registered process set: "
                                         r"call hvd.add_process_set"):
        hvd.allreduce(__import__("torch").ones(1), process_set=other)
