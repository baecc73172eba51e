"""perseusrun starting real torch.distributed jobs on this machine (Gloo mode)."""

import signal
import subprocess
import time
import uuid

import psutil
import pytest

from run_helpers import BASE_ENV, PERSEUSRUN, PYTHON, SCRIPTS, perseusrun, processes_with, rank_lines, reports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

ALLREDUCE = str(SCRIPTS / "allreduce.py")
CRASH = str(SCRIPTS / "crash.py")


@pytest.mark.parametrize("np_", [2, 4])
def test_allreduce_one_host(np_, tmp_path):
    proc = perseusrun(["-np", str(np_), "--log-dir", str(tmp_path / "logs"), "-x", "EXTRA_VAR=from-x",
                       "--", PYTHON, ALLREDUCE, "--detect"])
    assert proc.returncode == 0, proc.stderr
    got = reports(proc.stdout)
    assert [r["rank"] for r in got] == list(range(np_))
    assert all(r["printed_as"] == str(r["rank"]) for r in got), "the prefix names the rank that printed"
    assert {r["sum"] for r in got} == {float(np_ * (np_ + 1) // 2)}
    for r in got:
        e = r["env"]
        assert (e["RANK"], e["WORLD_SIZE"], e["LOCAL_RANK"], e["LOCAL_WORLD_SIZE"], e["GROUP_RANK"]) == \
            (str(r["rank"]), str(np_), str(r["rank"]), str(np_), "0")
        assert e["MASTER_ADDR"] == "127.0.0.1" and e["MASTER_PORT"] != e["PERSEUS_MASTER_PORT"]
        assert e["EXTRA_VAR"] == "from-x"
        assert (e["HOROVOD_RANK"], e["HOROVOD_SIZE"]) == (str(r["rank"]), str(np_))  # as horovodrun --gloo
        d = r["detect"]  # still perseusrun, with the HOROVOD_* variables set too
        assert (d["launcher"], d["rank"], d["size"], d["local_size"]) == ("perseusrun", r["rank"], np_, np_)
    for rank in range(np_):  # --log-dir: the rank's own lines, without the prefix
        logged = (tmp_path / "logs" / "rank.{}".format(rank) / "stdout").read_text()
        assert logged.startswith("REPORT ") and '"rank": {}'.format(rank) in logged
        assert (tmp_path / "logs" / "rank.{}".format(rank) / "stderr").exists()


@pytest.mark.parametrize("then,np_", [("allreduce", 4), ("sleep", 2)])
def test_crash_after_first_allreduce_ends_the_job(then, np_):
    token = uuid.uuid4().hex
    timeout = 30
    started = time.time()
    proc = perseusrun(["-np", str(np_), "--", PYTHON, CRASH, "--crash-rank", "1", "--code", "3", "--then", then,
                       "--token", token], env={"GLOO_TIMEOUT_SECONDS": str(timeout)}, timeout=240)
    ended = time.time()
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "perseusrun: rank 1 on localhost exited with code 3; terminating the other {} rank(s)".format(np_ - 1) in proc.stderr
    lines = rank_lines(proc.stdout)
    crash_at = float([l for l in lines["1"] if l.startswith("CRASH_AT ")][0].split()[1])
    assert ended - crash_at < timeout, "perseusrun must end the job within GLOO_TIMEOUT_SECONDS of the crash"
    assert all(any(l.startswith("first allreduce") for l in lines[str(r)]) for r in range(np_))
    assert not any("survived" in l for ls in lines.values() for l in ls)
    pids = [int(p) for ls in lines.values() for l in ls if l.startswith("PID ") for p in l.split()[1:]]
    assert len(pids) >= np_
    time.sleep(0.2)
    assert processes_with(token) == [], "rank processes left behind"
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert alive == [], "processes of the ranks (or their children) left behind"
    assert started < crash_at


def test_ctrl_c_ends_every_rank():
    token = uuid.uuid4().hex
    script = "import os, subprocess, time; subprocess.Popen(['sleep', '300']); print('UP', flush=True); time.sleep(300)"
    proc = subprocess.Popen([PERSEUSRUN, "-np", "3", "--", PYTHON, "-c", script, token], env=BASE_ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    seen = []
    while len(seen) < 3:
        line = proc.stdout.readline()
        assert line, "perseusrun ended before its ranks came up"
        if line.endswith(":UP\n"):
            seen.append(line)
    ranks = [p for p in processes_with(token) if p != proc.pid]  # perseusrun's own argv holds the token too
    assert len(ranks) == 3
    children = [c.pid for r in ranks for c in psutil.Process(r).children()]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "SIGINT received, ending all ranks" in err
    time.sleep(0.2)
    assert processes_with(token) == []
    assert not [p for p in children if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_two_jobs_started_at_the_same_instant_both_succeed():
    # each perseusrun holds the MASTER_PORT it picked until its rank 0 serves it, and perseus opens no port of its own
    hvd_script = str(SCRIPTS / "hvd_allreduce.py")
    procs = [subprocess.Popen([PERSEUSRUN, "-np", "2", "--", PYTHON, hvd_script], env=BASE_ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True) for _ in range(2)]
    outputs = [proc.communicate(timeout=240) for proc in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
        assert [r["sum"] for r in reports(out)] == [3.0, 3.0]
