"""The examples perseus_mxnet ships (perseus/mxnet/examples/) run as their docstrings launch them: under
`perseusrun -np 2`, and under plain `mpirun -np 2 ./config.sh python ...` (the seed's style, manual 4.6),
with the config.sh the wheel installed (executable) deriving each process's device from Open MPI's
OMPI_COMM_WORLD_RANK % OMPI_COMM_WORLD_LOCAL_SIZE."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE_EXAMPLES = REPO_ROOT / "native" / "bindings" / "mxnet" / "perseus" / "mxnet" / "examples"
RESULT = re.compile(r"RESULT ")
LAUNCHER_PREFIXES = ("PERSEUS_", "GLOO_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "OMPI_", "PMI_", "HYDRA_")
PYTHONPATH = os.pathsep.join([str(REPO_ROOT / "native" / "runtime"), str(REPO_ROOT / "native" / "bindings" / "mxnet")])


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    env.update(PYTHONPATH=PYTHONPATH, GLOO_TIMEOUT_SECONDS="30", **extra)
    return env


def rank_results(stdout):
    """One RESULT per rank, found anywhere in the output (a launcher can glue two ranks' lines)."""
    found = sorted((json.JSONDecoder().raw_decode(stdout[m.end():])[0] for m in RESULT.finditer(stdout)),
                   key=lambda r: r["rank"])
    assert [r["rank"] for r in found] == [0, 1], stdout[-3000:]
    assert all(r["size"] == 2 for r in found)
    return found


@pytest.fixture(scope="module")
def installed_examples(mxnet_python):
    """perseus/mxnet/examples as the wheel installed it in the MXNet environment."""
    purelib = subprocess.run([mxnet_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
    folder = Path(purelib) / "perseus" / "mxnet" / "examples"
    assert (folder / "config.sh").is_file(), "the perseus_mxnet wheel does not ship examples/config.sh"
    assert os.access(str(folder / "config.sh"), os.X_OK), "config.sh is not executable as installed"
    for name in ("mxnet_mnist.py", "mxnet_gluon.py", "mxnet_module.py"):
        assert (folder / name).is_file() and (folder / name).read_bytes() == (SOURCE_EXAMPLES / name).read_bytes(), (
            "%s: the installed example differs from the checkout's: run `bash native/bindings/mxnet/dev_env.sh`" % name)
    return folder


def perseusrun(mxnet_python, module, *args):
    from socket import socket

    ports = []
    for _ in range(2):
        with socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    env = clean_env(MASTER_PORT=str(ports[0]), PERSEUS_MASTER_PORT=str(ports[1]))
    proc = subprocess.run([str(Path(sys.executable).with_name("perseusrun")), "-np", "2", "--", mxnet_python, "-m", "perseus.mxnet.examples." + module]
                          + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def mpirun_config_sh(mxnet_python, folder, module, *args):
    if shutil.which("mpirun") is None:
        pytest.fail("mpirun not found: bash tests/run/install_test_deps.sh installs Open MPI")
    command = ["mpirun"] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) + [
        "-np", "2", "--oversubscribe", "--bind-to", "none", "-x", "PYTHONPATH", "-x", "GLOO_TIMEOUT_SECONDS",
        "./config.sh", mxnet_python, "-m", "perseus.mxnet.examples." + module] + list(args)
    proc = subprocess.run(command, cwd=str(folder), env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def check_gluon(results):
    r0, r1 = results
    assert r0["params"] == r1["params"]  # rank 0's initial parameters, then the same summed gradients
    for r in results:
        assert len(r["losses"]) == 3 and r["losses"][-1] < 0.8 * r["losses"][0], r


def check_module(results):
    r0, r1 = results
    assert r0["params"] == r1["params"]
    for r in results:
        assert r["accuracy"][-1] > max(0.9, r["accuracy_before"] + 0.3), r


def test_gluon_example_under_perseusrun(mxnet_python):
    check_gluon(rank_results(perseusrun(mxnet_python, "mxnet_gluon")))


def test_module_example_under_perseusrun(mxnet_python):
    check_module(rank_results(perseusrun(mxnet_python, "mxnet_module")))


def test_gluon_example_under_mpirun_config_sh(mxnet_python, installed_examples):
    results = rank_results(mpirun_config_sh(mxnet_python, installed_examples, "mxnet_gluon"))
    check_gluon(results)
    assert [r["gpus"] for r in results] == ["0", "1"]  # config.sh: OMPI_COMM_WORLD_RANK % LOCAL_SIZE


def test_module_example_under_mpirun_config_sh(mxnet_python, installed_examples):
    results = rank_results(mpirun_config_sh(mxnet_python, installed_examples, "mxnet_module"))
    check_module(results)
    assert [r["gpus"] for r in results] == ["0", "1"]
    assert all(r["device"] == "cpu(0)" for r in results)  # the pip mxnet has no GPU: the examples use the CPU


def test_mnist_example_under_mpirun_config_sh(mxnet_python, installed_examples):
    out = mpirun_config_sh(mxnet_python, installed_examples, "mxnet_mnist", "--epochs", "3")
    digests = re.findall(r"PARAMS ([0-9a-f]{64})", out)
    assert len(digests) == 2 and digests[0] == digests[1], out[-2000:]
    by_epoch = {}
    for epoch, loss in re.findall(r"EPOCH (\d+) loss ([\d.]+)", out):
        by_epoch.setdefault(int(epoch), []).append(float(loss))
    assert sorted(by_epoch) == [0, 1, 2] and all(len(v) == 2 for v in by_epoch.values()), out[-2000:]
    assert max(by_epoch[2]) < min(by_epoch[0]), by_epoch


def test_config_sh_outside_open_mpi_says_how_to_start_it(installed_examples):
    proc = subprocess.run([str(installed_examples / "config.sh"), "true"], env=clean_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 2 and "start it with Open MPI's mpirun" in proc.stderr
    env = clean_env(OMPI_COMM_WORLD_RANK="3", OMPI_COMM_WORLD_LOCAL_SIZE="2")
    proc = subprocess.run([str(installed_examples / "config.sh"), "sh", "-c", "echo $MXNET_VISIBLE_DEVICE"], env=env,
                          stdout=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "1"  # 3 % 2
