"""The TensorFlow examples perseus-common ships (native/runtime/perseus/examples/) run as their docstrings
launch them: `perseusrun -np 2 -- python <example>` on 2 CPU processes, synthetic data."""
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.ports import free_ports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

EXAMPLES = Path(__file__).resolve().parents[2] / "native" / "runtime" / "perseus" / "examples"
RESULT = re.compile(r"RESULT ")



def run_example(name, *args, cwd=None, extra_env=None, python=sys.executable):
    master, store = free_ports(2)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERSEUS_", "GLOO_", "MASTER_", "RANK", "WORLD_SIZE", "LOCAL_"))}
    env.update({"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(store), "TF_CPP_MIN_LOG_LEVEL": "3"})
    env.update(extra_env or {})
    done = subprocess.run([str(Path(python).with_name("perseusrun")), "-np", "2", "--", str(python),
                           str(EXAMPLES / name), *args], env=env, capture_output=True, text=True, timeout=300, cwd=cwd)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def rank_results(stdout):
    """One RESULT per rank, found anywhere in the relayed output (a launcher can glue two ranks' lines)."""
    found = sorted((json.JSONDecoder().raw_decode(stdout[m.end():])[0] for m in RESULT.finditer(stdout)),
                   key=lambda r: r["rank"])
    assert [r["rank"] for r in found] == [0, 1], stdout[-3000:]
    assert all(r["size"] == 2 for r in found)
    return found


@pytest.mark.usefixtures("ops")
def test_keras_mnist_example_on_two_ranks():
    stdout = run_example("tensorflow_keras_mnist.py", "--epochs", "3", "--steps-per-epoch", "20")
    found = re.search(r"ranks: 2; loss per epoch \(averaged over ranks\): ([\d., ]+);", stdout)
    assert found, stdout[-3000:]
    losses = [float(v) for v in found.group(1).split(",")]
    assert len(losses) == 3 and losses[-1] < losses[0], losses


@pytest.mark.usefixtures("ops")
@pytest.mark.parametrize("extra", [[], ["--plain-session"]], ids=["monitored-session", "plain-session"])
def test_tf1_session_example(extra):
    r0, r1 = rank_results(run_example("tensorflow_sess.py", "--steps", "150", *extra))
    assert r0["variables"] == r1["variables"]  # rank 0's initial variables, then the same averaged updates
    for r in (r0, r1):
        assert r["steps"] == 150 and r["last_loss"] < 0.5 * r["first_loss"], r


@pytest.mark.usefixtures("ops")
def test_tf2_eager_example():
    r0, r1 = rank_results(run_example("tensorflow2_eager.py", "--steps", "60"))
    assert r0["variables"] == r1["variables"]
    for r in (r0, r1):
        assert r["steps"] == 60 and r["last_loss"] < 0.8 * r["first_loss"], r


KERAS = [pytest.param({}, id="keras3"),
         pytest.param({"TF_USE_LEGACY_KERAS": "1"}, id="keras2-tf_keras",
                      marks=pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None, reason="no tf_keras"))]


@pytest.mark.usefixtures("ops")
@pytest.mark.parametrize("keras_env", KERAS)
def test_keras_example_writes_one_checkpoint(tmp_path, keras_env):
    r0, r1 = rank_results(run_example("tensorflow2_keras.py", "--epochs", "4", "--checkpoint-dir", str(tmp_path),
                                      extra_env=keras_env))
    assert r0["variables"] == r1["variables"]
    assert r0["losses"] == r1["losses"]  # MetricAverageCallback: both ranks log the averaged loss
    assert r0["losses"][-1] < 0.7 * r0["losses"][0], r0
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.weights.h5"]
