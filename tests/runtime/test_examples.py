"""The examples shipped in perseus/examples run as the manual launches them (2 CPU processes)."""

import importlib.util
import os
import re
import subprocess
import sys
import pytest

from perseus_harness import REPO_ROOT, free_port, python_path

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

EXAMPLES = REPO_ROOT / "native" / "runtime" / "perseus" / "examples"
SMALL = ["--batch-size", "4", "--num-warmup-batches", "1", "--num-batches-per-iter", "2", "--num-iters", "2"]


def run(launcher, script, extra=()):
    env = dict(os.environ, PYTHONPATH=python_path(), OMP_NUM_THREADS="1", PERSEUS_MASTER_PORT=str(free_port()))
    master_port = free_port()
    command = [sys.executable, "-m", launcher, "--nproc_per_node=2", "--nnodes=1", "--node_rank=0",
               "--master_addr=127.0.0.1", "--master_port={}".format(master_port), script] + SMALL + list(extra)
    done = subprocess.run(command, cwd=str(EXAMPLES), env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return done.stdout


def test_ddp_benchmark_with_the_manuals_launch_command():
    out = run("torch.distributed.launch", "pytorch_ddp_benchmark.py")  # passes --local-rank=N, as in 1.x
    assert "processes: 2 (CPU)" in out
    assert re.search(r"Total img/sec on 2 CPU\(s\): [\d.]+", out)


def test_horovod_benchmark_under_torchrun():
    out = run("torch.distributed.run", "pytorch_horovod_benchmark.py", ["--fp16-allreduce"])
    assert "processes: 2 (CPU), 1 node(s)" in out
    assert re.search(r"Total img/sec on 2 CPU\(s\): [\d.]+", out)


def test_unknown_model_without_torchvision_is_a_clear_error():
    if importlib.util.find_spec("torchvision") is not None:
        pytest.skip("torchvision is installed here: torchvision models build")
    sys.path.insert(0, str(EXAMPLES))
    try:
        import _synthetic
        with pytest.raises(SystemExit, match="torchvision is not installed.*small_cnn"):
            _synthetic.build_model("resnet50")
    finally:
        sys.path.remove(str(EXAMPLES))
