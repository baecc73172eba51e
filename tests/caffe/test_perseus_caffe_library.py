"""libperseus-caffe: its exported symbols, and the solver-callback driver (what patch 1's PerseusSync does:
broadcast rank 0's weights, average every parameter's diff between Backward and Update) in 2-rank jobs
under a plain mpirun and under perseusrun."""

import subprocess

import pytest

from caffe_helpers import clean_env, mpirun_args, perseusrun_args, reports
from support.spellings import NANCHECK_SPELLINGS

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

# fp16 keeps 11 significant bits: the averaged diffs are within a few 2^-11 of the fp64 average
FP16_TOLERANCE = 4e-3


def driver_job(build, launcher, np=2, extra=None, timeout=180):
    driver = str(build / "bin" / "perseus_caffe_driver")
    env = clean_env(extra)
    if launcher == "mpirun":
        args = mpirun_args(np, ["GLOO_TIMEOUT_SECONDS"] + sorted(extra or {})) + [driver, "5"]
    else:
        args = perseusrun_args(np, env) + [driver, "5"]
    return subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout)


def test_exports_only_the_c_abi_and_needs_only_libc(library_build):
    lib = str(library_build / "lib" / "libperseus-caffe.so")
    symbols = subprocess.run(["nm", "-D", "--defined-only", lib], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout.split("\n")
    names = [line.split()[-1] for line in symbols if line.strip()]
    assert "perseus_caffe_allreduce_average" in names and "perseus_engine_allreduce" in names
    assert [n for n in names if not n.startswith(("perseus_caffe_", "perseus_engine_"))] == []
    dynamic = subprocess.run(["readelf", "-d", lib], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    needed = sorted(line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line)
    assert [n for n in needed if not n.startswith(("libc.so", "ld-linux", "libm.so"))] == [], needed
    assert "Library soname: [libperseus-caffe.so]" in dynamic


@pytest.mark.parametrize("launcher", ["mpirun", "perseusrun"])
def test_two_ranks_agree_and_send_fp16_by_default(library_build, launcher):
    proc = driver_job(library_build, launcher)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = reports(proc.stdout)
    assert [r["rank"] for r in found] == [0, 1], proc.stdout
    assert found[0]["checksum"] == found[1]["checksum"]  # identical weights on both ranks
    for r in found:
        assert r["broadcast_err"] == 0  # rank 0's initial weights everywhere
        assert r["fp16"] == 1
        assert 0 < r["max_err"] < FP16_TOLERANCE  # fp16 rounding is visible, and small
        assert r["fused_groups"] > 0  # a step's diffs went out fused
    assert "fp16 on the wire" in proc.stdout
    if launcher == "mpirun":
        assert "MPI bootstrap" in proc.stdout


def test_fp32_wire_is_exact(library_build):
    proc = driver_job(library_build, "mpirun", extra={"PERSEUS_ALLREDUCE_DTYPE": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = reports(proc.stdout)
    assert len(found) == 2 and found[0]["checksum"] == found[1]["checksum"]
    for r in found:
        assert r["fp16"] == 0 and r["max_err"] < 1e-6
    assert "fp32 on the wire" in proc.stdout


@pytest.mark.parametrize("launcher", ["mpirun", "perseusrun"])
def test_a_crashed_rank_ends_the_job_non_zero(library_build, launcher):
    proc = driver_job(library_build, launcher, extra={"CAFFE_DRIVER_CRASH_RANK": "1",
                                                      "GLOO_TIMEOUT_SECONDS": "10"})
    assert proc.returncode != 0
    assert len(reports(proc.stdout)) < 2


def test_a_bad_launcher_variable_is_named(library_build):
    env = clean_env({"RANK": "3", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"})
    proc = subprocess.run([str(library_build / "bin" / "perseus_caffe_driver"), "1"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert proc.returncode == 1
    assert "RANK=3 is not below the world size 2" in proc.stderr


def test_the_nan_check_is_the_engines(library_build):
    """PERSEUS_ALLREDUCE_NANCHECK=1 is the engine's: the driver's gradients are finite, so the job passes;
    an invalid value is refused naming the variable."""
    ok = driver_job(library_build, "mpirun", extra={"PERSEUS_ALLREDUCE_NANCHECK": "1"})
    assert ok.returncode == 0 and "NaN check on" in ok.stdout, ok.stdout + ok.stderr
    bad = driver_job(library_build, "mpirun", extra={"PERSEUS_ALLREDUCE_NANCHECK": "yes"})
    assert bad.returncode != 0 and "PERSEUS_ALLREDUCE_NANCHECK" in bad.stderr + bad.stdout


@pytest.mark.parametrize("spelling", NANCHECK_SPELLINGS)
def test_a_nan_gradient_is_stopped(library_build, spelling):
    """A NaN diff on one rank ends the job on the engine's error under the declared name and under every alias
    (the manual's PERSEUS_ALLREDUCE_NANHECK) alike; without the check the same job runs to its end."""
    stopped = driver_job(library_build, "mpirun", extra={spelling: "1", "CAFFE_DRIVER_NAN_RANK": "1"})
    out = stopped.stdout + stopped.stderr
    assert stopped.returncode != 0 and "perseus_caffe_driver: allreduce:" in out, out[-3000:]
    assert "PERSEUS_ALLREDUCE_NANCHECK: the reduced result of" in out and "is not finite" in out, out[-3000:]
    unchecked = driver_job(library_build, "mpirun", extra={"CAFFE_DRIVER_NAN_RANK": "1"})
    # the NaN reached every rank's weights: their checksums are NaN
    assert unchecked.returncode == 0 and unchecked.stdout.count('"checksum": nan') == 2, \
        unchecked.stdout[-3000:] + unchecked.stderr[-3000:]


def test_one_process_without_a_launcher(library_build):
    proc = subprocess.run([str(library_build / "bin" / "perseus_caffe_driver"), "2"], env=clean_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "one process" in proc.stdout
    found = reports(proc.stdout)
    assert found[0]["size"] == 1 and found[0]["max_err"] < 1e-6  # its own diffs, only fp32 rounding
