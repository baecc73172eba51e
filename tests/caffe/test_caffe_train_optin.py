"""`caffe train` of the patched Caffe (opt-in: AIACC_OPTIN=1; the first run builds Caffe with
`aiacc-build caffe build`, ~13 min at -j2 on a quiet machine, then cached) on the example solver + net of
recipes/caffe/examples/synthetic: 2 ranks under a plain mpirun and under perseusrun end with identical
weights, equal within fp16 tolerance to one process training on the union of both ranks' batches; rank 0
alone tests and snapshots; a rank that crashes ends the job non-zero; patch 3's augmentation runs."""

import array
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from caffe_helpers import REPO_ROOT, clean_env, mpirun_args, perseusrun_args

pytestmark = pytest.mark.optin("builds Caffe (~8 CPU-min cold) and runs caffe train jobs")

EXAMPLE = REPO_ROOT / "recipes" / "caffe" / "examples" / "synthetic"
AIACC_BUILD = str(Path(sys.executable).with_name("aiacc-build"))


@pytest.fixture(scope="module")
def caffe():
    proc = subprocess.run([AIACC_BUILD, "caffe", "build", "--no-deps", "--json"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=7200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = json.loads(proc.stdout)
    binary = Path(steps["caffe"]["output"]) / "tools" / "caffe"
    assert binary.is_file()
    return {"bin": str(binary), "lib": steps["libperseus-caffe"]["output"] + "/lib"}


@pytest.fixture()
def workdir(tmp_path):
    subprocess.run([sys.executable, str(EXAMPLE / "make_data.py"), str(tmp_path)], check=True)
    for name in ("net.prototxt", "solver.prototxt", "augment_net.prototxt", "augment_solver.prototxt"):
        shutil.copy(str(EXAMPLE / name), str(tmp_path / name))
    # the one-process reference trains on the union of both ranks' batches
    net = (tmp_path / "net.prototxt").read_text()
    (tmp_path / "union_net.prototxt").write_text(net.replace('source: "train.txt"  batch_size: 8',
                                                             'source: "train.txt"  batch_size: 16'))
    solver = (tmp_path / "solver.prototxt").read_text()
    (tmp_path / "union_solver.prototxt").write_text(solver.replace('net: "net.prototxt"', 'net: "union_net.prototxt"'))
    (tmp_path / "long_solver.prototxt").write_text(solver.replace("max_iter: 20", "max_iter: 1000000"))
    return tmp_path


def run(caffe, workdir, args, extra=None, launcher=None, timeout=600):
    env = clean_env(dict({"LD_LIBRARY_PATH": caffe["lib"], "GLOG_logtostderr": "1"}, **(extra or {})))
    if launcher == "mpirun":
        prefix = mpirun_args(2, ["GLOO_TIMEOUT_SECONDS", "LD_LIBRARY_PATH", "GLOG_logtostderr"] + sorted(extra or {}))
    elif launcher == "perseusrun":
        prefix = perseusrun_args(2, env)
    else:
        prefix = []
    return subprocess.run(prefix + args, cwd=str(workdir), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout)


def weights(path: Path) -> array.array:
    values = array.array("f")
    values.frombytes(path.read_bytes())
    return values


def max_diff(a: array.array, b: array.array) -> float:
    assert len(a) == len(b) and len(a) > 0
    return max(abs(x - y) for x, y in zip(a, b))


def train(caffe, workdir, name, launcher, solver="solver.prototxt", extra=None):
    proc = run(caffe, workdir, [caffe["bin"], "train", "--solver", solver],
               dict({"PERSEUS_CAFFE_RANK_WEIGHTS": name}, **(extra or {})), launcher)
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc


def test_two_ranks_match_one_process_on_the_union_of_their_batches(caffe, workdir):
    union = train(caffe, workdir, "union", None, "union_solver.prototxt")
    assert "one process" in union.stdout
    reference = weights(workdir / "union.rank0.bin")

    results = {}
    for launcher in ("mpirun", "perseusrun"):
        proc = train(caffe, workdir, launcher, launcher)
        assert "fp16 on the wire" in proc.stdout  # the default
        assert "Rank 1 reads 32 of 64 lines" in proc.stdout  # per-rank data shards
        # rank 0 alone tests and snapshots (each rank logs with its own glog; mpirun tags the lines)
        # iterations 0 and 10 in the loop (test_initialization), 20 after it: rank 0 only
        assert proc.stdout.count("Testing net (#0)") == 3
        assert proc.stdout.count("Snapshotting to binary proto file") == 1
        r0, r1 = weights(workdir / (launcher + ".rank0.bin")), weights(workdir / (launcher + ".rank1.bin"))
        assert r0 == r1, "the ranks' weights differ after training"
        results[launcher] = max_diff(r0, reference)

    fp32 = train(caffe, workdir, "fp32", "mpirun", extra={"PERSEUS_ALLREDUCE_DTYPE": "1"})
    assert "fp32 on the wire" in fp32.stdout
    f0, f1 = weights(workdir / "fp32.rank0.bin"), weights(workdir / "fp32.rank1.bin")
    assert f0 == f1
    fp32_diff = max_diff(f0, reference)
    print("max |w - w_union|: mpirun fp16 {mpirun:.3g}, perseusrun fp16 {perseusrun:.3g}, fp32 {0:.3g}".format(
        fp32_diff, **results))
    assert fp32_diff < 1e-4  # only the summation order differs
    for diff in results.values():
        assert diff < 2e-2  # fp16 on the wire: within its rounding over 20 steps
        assert diff > fp32_diff  # and visibly fp16


@pytest.mark.parametrize("launcher", ["mpirun", "perseusrun"])
def test_a_rank_that_crashes_ends_the_job_non_zero(caffe, workdir, launcher):
    rank_var = "OMPI_COMM_WORLD_RANK" if launcher == "mpirun" else "RANK"
    # rank 1 is killed by its CPU-time limit in the middle of a long training
    script = 'if [ "${}" = 1 ]; then ulimit -t 3; fi; exec "$0" train --solver long_solver.prototxt'.format(rank_var)
    proc = run(caffe, workdir, ["bash", "-c", script, caffe["bin"]], {"GLOO_TIMEOUT_SECONDS": "20"}, launcher,
               timeout=300)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "Iteration" in proc.stdout  # the job was training when the rank died


def test_patch_3_augments_image_data(caffe, workdir):
    proc = run(caffe, workdir, [caffe["bin"], "train", "--solver", "augment_solver.prototxt"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Augmenting: scale [0.8, 1.5], rotation 15 deg, contrast 0.2, brightness 20" in proc.stdout
    assert "Iteration 4, loss = " in proc.stdout
    assert "output data size: 8,1,6,6" in proc.stdout  # cropped back to crop_size after the random resize
