"""The Horovod whole-model helpers need torch alone: run them in a fresh venv without numpy."""

import pytest

import torch_only_env
from perseus_harness import launch

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


@pytest.fixture(scope="module")
def torch_only_python(tmp_path_factory):
    return str(torch_only_env.build(tmp_path_factory.mktemp("torch-only") / "venv"))


def test_object_and_optimizer_state_broadcasts_run_without_numpy(torch_only_python):
    ranks = [r.output for r in launch("hvd_objects.py", 2, python=torch_only_python)]
    assert not ranks[0]["numpy_importable"] and not ranks[1]["numpy_importable"]
    assert ranks[0]["weight_sum"] == ranks[1]["weight_sum"]
    assert ranks[0]["momentum"] == ranks[1]["momentum"]  # rank 0's optimizer state on rank 1
    for rank in ranks:
        assert rank["received"] == [7, [0, 1, 2, 3], ""]
        assert rank["gathered"] == [["rank", 0, [0, 255]], ["rank", 1, [0, 255, 0, 255]]]


def test_the_environment_really_lacks_numpy(torch_only_python):
    import subprocess

    done = subprocess.run([torch_only_python, "-c", "import numpy"], capture_output=True, text=True)
    assert done.returncode != 0 and "No module named 'numpy'" in done.stderr
