"""perseus.mxnet under a plain `mpirun -np 2` (the seed's style: no MASTER_ADDR, no perseusrun): the engine
inside perseus_mxnet's library finds the Open MPI bootstrap plugin the wheel ships beside it."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "workers" / "mxnet_cases.py"
REPORT = re.compile(r"REPORT ")
LAUNCHER_PREFIXES = ("PERSEUS_", "GLOO_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "OMPI_", "PMI_", "HYDRA_")


def test_plain_mpirun_gluon(mxnet_python):
    if shutil.which("mpirun") is None:
        pytest.fail("mpirun not found: bash tests/run/install_test_deps.sh installs Open MPI")
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    env.update({"PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "native" / "runtime"),
                                               str(REPO_ROOT / "native" / "bindings" / "mxnet")]),
                "GLOO_TIMEOUT_SECONDS": "30"})
    args = ["mpirun"] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) + [
        "-np", "2", "--oversubscribe", "--bind-to", "none", "-x", "PYTHONPATH", "-x", "GLOO_TIMEOUT_SECONDS",
        mxnet_python, str(WORKER), "gluon"]
    proc = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = sorted((json.JSONDecoder().raw_decode(proc.stdout[m.end():])[0] for m in REPORT.finditer(proc.stdout)),
                   key=lambda r: r["rank"])
    assert [r["rank"] for r in found] == [0, 1], proc.stdout[-2000:]
    assert found[0]["final"] == found[1]["final"] and found[0]["size"] == 2
    assert found[0]["losses"][-1] < 0.5 * found[0]["losses"][0]
