"""Horovod's PyTorch synthetic benchmark (seed 004) runs on perseus with only its import changed
(and a stand-in model for torchvision; see data/README.md), on 2 CPU processes."""

import re
from pathlib import Path

import pytest

from perseus_harness import launch

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

SCRIPT = Path(__file__).resolve().parent / "data" / "pytorch_synthetic_benchmark.py"
ARGS = ["--model", "small_cnn", "--batch-size", "8", "--num-warmup-batches", "2", "--num-batches-per-iter", "2",
        "--num-iters", "2"]


def test_the_copy_differs_from_the_seed_only_in_the_documented_lines():
    text = SCRIPT.read_text()
    assert "import perseus.torch.horovod as hvd" in text and "import horovod" not in text
    assert "import standin_models as models" in text and "torchvision" not in text


def test_synthetic_benchmark_runs_on_two_processes():
    ranks = launch(str(SCRIPT), 2, ARGS, timeout=240)
    out = ranks[0].stdout
    assert "Model: small_cnn" in out and "Number of CPUs: 2" in out
    assert len(re.findall(r"Iter #\d+: [\d.]+ img/sec per CPU", out)) == 2
    assert re.search(r"Total img/sec on 2 CPU\(s\): [\d.]+ \+-[\d.]+", out), out
    assert ranks[1].stdout == ""  # only rank 0 logs
