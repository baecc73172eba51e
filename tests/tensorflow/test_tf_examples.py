"""perseus/examples/tensorflow_keras_mnist.py runs as its docstring launches it (2 CPU processes)."""
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "native" / "runtime" / "perseus" / "examples" / "tensorflow_keras_mnist.py"


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@pytest.mark.usefixtures("ops")
def test_keras_mnist_example_on_two_ranks():
    master, store = _free_ports(2)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERSEUS_", "GLOO_", "MASTER_", "RANK", "WORLD_SIZE", "LOCAL_"))}
    env.update({"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(store), "TF_CPP_MIN_LOG_LEVEL": "3"})
    done = subprocess.run([str(Path(sys.executable).with_name("perseusrun")), "-np", "2", "--", sys.executable, str(EXAMPLE),
                           "--epochs", "3", "--steps-per-epoch", "20"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = re.search(r"ranks: 2; loss per epoch \(averaged over ranks\): ([\d., ]+);", done.stdout)
    assert found, done.stdout[-3000:]
    losses = [float(v) for v in found.group(1).split(",")]
    assert len(losses) == 3 and losses[-1] < losses[0], losses
