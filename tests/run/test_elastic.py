"""Elastic perseusrun with real processes: hosts are loopback addresses 127.0.0.x, one slot each, all on this
machine (distinct hosts for discovery and blacklisting; not network namespaces: see docs/elastic.md)."""

import os
import signal
import subprocess
import time

import numpy as np
import pytest

from run_helpers import BASE_ENV, PERSEUSRUN, PYTHON, SCRIPTS
from support import elastic as E

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

IDLE = str(SCRIPTS / "elastic_idle.py")
HOSTS4 = ["127.0.0.1:1", "127.0.0.2:1", "127.0.0.3:1", "127.0.0.4:1"]


start, finish = E.start, E.finish


def test_kill_one_worker_then_grow_back_torch(tmp_path):
    """4 workers train; one is SIGKILLed mid-epoch and its host leaves discovery; 3 go on from the last commit;
    discovery prints garbage for a while (retried), then a new host appears and the job grows back to 4. The
    final weights equal numpy's replay of the committed steps. The workers hold before step 9 until the test says
    go (6 steps make an epoch of 4 workers: the kill lands in the second epoch)."""
    script, set_hosts = E.discovery_script(tmp_path, HOSTS4)
    job = start(["-np", "4", "--min-np", "3", "--max-np", "4", "--host-discovery-script", str(script),
                 "--elastic-timeout", "60", PYTHON, str(E.TRAIN), str(tmp_path), "16", "0.02", "3"], tmp_path,
                env={"ELASTIC_TEST_HOLD": "8"})
    failed = None
    try:
        E.wait_for(lambda: E.progress(tmp_path) == (8, 4), "4 workers holding after step 8", 120, job)
        os.kill(E.worker_pid(tmp_path, "127.0.0.4:0"), signal.SIGKILL)
        set_hosts(HOSTS4[:3])
        E.wait_for(lambda: E.progress(tmp_path) == (8, 3), "3 workers at step 8", 60, job)
        (tmp_path / "hosts").write_text("not a host line!\n")  # a discovery failure after the first: retried
        time.sleep(1.5)  # discovery runs every second: it sees the garbage at least once
        set_hosts(HOSTS4[:3] + ["127.0.0.5:1"])
        time.sleep(1.5)  # and then the new host: the workers learn of it at their next commit (step 10)
        (tmp_path / "go.8").write_text("")
        E.wait_for(lambda: E.progress(tmp_path)[1] == 4, "the job grown back to 4 workers", 60, job)
    except AssertionError as error:
        failed = error
    code, out, err = finish(job, 120)
    assert failed is None, "{}\n{}".format(failed, err[-4000:])
    assert code == 0, err[-3000:]
    assert "worker 127.0.0.4:0 was killed by SIGKILL" in err
    assert "line 1 of its output, 'not a host line!'" in err
    result = E.result(tmp_path)
    sizes = [step["size"] for step in result["history"]]
    assert len(sizes) == 16
    # commits after steps 3, 6, 9, ...: steps 7 and 8 ran with 4 workers, were lost with the kill and ran again
    # with 3; the new host joined at the commit after step 9
    assert sizes == [4] * 6 + [3] * 3 + [4] * 7, sizes
    diff = np.max(np.abs(np.array(result["weights"]) - E.replay(result["history"])))
    assert diff <= 1e-6, diff


def _timed(args, tmp_path, timeout, env=None):
    began = time.monotonic()
    code, out, err = finish(start(args, tmp_path, env), timeout)
    return code, err, time.monotonic() - began


@pytest.mark.parametrize("body, cause", [
    ("echo 'no such host' >&2; exit 3", "exited with code 3: no such host"),
    ("echo 'hosts: a b c'", "line 1 of its output, 'hosts: a b c', is not HOST or HOST:SLOTS"),
    ("echo 127.0.0.1", "names host 127.0.0.1 without slots; print 127.0.0.1:SLOTS or pass --slots-per-host"),
])
def test_discovery_failing_on_its_first_call_fails_the_job(body, cause, tmp_path):
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    code, err, took = _timed(["-np", "1", "--min-np", "1", "--host-discovery-script", str(script), PYTHON, IDLE],
                             tmp_path, 30)
    assert code == 1
    assert "discovery failed on its first call" in err and cause in err, err
    assert took < 10


def test_fewer_slots_than_min_np_for_longer_than_the_timeout(tmp_path):
    """Two idle workers form a job; one is killed, its host is blacklisted; one slot stays, below --min-np 2:
    the job ends after --elastic-timeout (and well before it + 30 s), naming the cause."""
    script, _ = E.discovery_script(tmp_path, HOSTS4[:2])
    job = start(["-np", "2", "--min-np", "2", "--host-discovery-script", str(script), "--elastic-timeout", "3",
                 PYTHON, IDLE], tmp_path)
    deadline = time.monotonic() + 60
    while not (tmp_path / "killed").exists() and time.monotonic() < deadline:
        for proc in __import__("psutil").Process(job.pid).children():
            if "PERSEUS_ELASTIC_WORKER" in proc.environ() and proc.environ()["PERSEUS_ELASTIC_WORKER"] == "127.0.0.2:0":
                time.sleep(0.5)  # let it join generation 1
                proc.kill()
                (tmp_path / "killed").write_text("")
        time.sleep(0.1)
    killed_at = time.monotonic()
    code, out, err = finish(job, 60)
    took = time.monotonic() - killed_at
    assert code == 1, err
    assert "only 1 slot(s) available" in err and "for longer than --elastic-timeout 3 s, fewer than --min-np 2" in err
    assert "blacklisted: 127.0.0.2" in err
    assert 3 <= took < 3 + 30, took


def test_too_few_slots_to_start(tmp_path):
    script, _ = E.discovery_script(tmp_path, HOSTS4[:1])
    code, err, took = _timed(["-np", "2", "--host-discovery-script", str(script), "--elastic-timeout", "2",
                              PYTHON, IDLE], tmp_path, 40)
    assert code == 1 and "fewer than -np 2" in err, err
    assert 2 <= took < 2 + 30


def test_discovery_failing_for_longer_than_the_timeout(tmp_path):
    script, _ = E.discovery_script(tmp_path, HOSTS4[:2])
    job = start(["-np", "2", "--host-discovery-script", str(script), "--elastic-timeout", "3", PYTHON, IDLE], tmp_path)
    E.wait_for(lambda: "generation 1 formed" in (tmp_path / "never").name or _formed(job), "generation 1", 60, job)
    (tmp_path / "hosts").unlink()  # cat fails from now on
    failing_at = time.monotonic()
    code, out, err = finish(job, 60)
    assert code == 1, err
    assert "exited with code 1" in err and "for longer than --elastic-timeout 3 s" in err, err
    assert time.monotonic() - failing_at < 3 + 30


def _formed(job):
    """Whether perseusrun has said a generation formed (reads its stderr line by line as it comes)."""
    line = job.stderr.readline()
    job._seen = getattr(job, "_seen", "") + line
    return "generation 1 formed" in job._seen


def test_worker_crashing_on_every_reset_hits_the_reset_limit(tmp_path):
    script, _ = E.discovery_script(tmp_path, HOSTS4)
    code, err, took = _timed(["-np", "4", "--min-np", "1", "--reset-limit", "2", "--host-discovery-script",
                              str(script), "--elastic-timeout", "20", PYTHON, IDLE], tmp_path, 60,
                             env={"ELASTIC_TEST_CRASH": "1"})
    assert code == 1, err
    assert "generation 3 formed: 2 worker(s)" in err
    assert "would re-form a 3rd time (worker 127.0.0.2:0 exited with code 3), but --reset-limit is 2" in err, err
    assert took < 20 + 30


@pytest.mark.parametrize("args, fragment", [
    (["--mpi", "--min-np", "1", "-H", "a:1,b:1"], "--mpi cannot run an elastic job"),
    (["--max-np", "4"], "--max-np is an elastic option; elastic mode needs --min-np or --host-discovery-script"),
    (["--min-np", "3"], "--min-np 3 is above -np 2"),
    (["--min-np", "1", "--max-np", "1"], "--max-np 1 is below -np 2"),
    (["--min-np", "1"], "--min-np needs the hosts"),
    (["--min-np", "1", "-H", "a:1", "--blacklist-cooldown-range", "0", "9"], "1 <= MIN <= MAX <= 3600"),
    (["--min-np", "1", "-H", "a:1", "--reset-limit", "-1"], "--reset-limit -1: must be at least 0"),
    (["--host-discovery-script", "/nonexistent/discover.sh"], "--host-discovery-script /nonexistent/discover.sh: no such file"),
    (["--host-discovery-script", "x.sh", "-H", "a:1"], "--host-discovery-script and -H both name the hosts"),
    (["--min-np", "1", "-H", "a:1"], "HOROVOD_ELASTIC_TIMEOUT='soon': give whole seconds"),
])
def test_elastic_usage_errors(args, fragment):
    env = dict(BASE_ENV, HOROVOD_ELASTIC_TIMEOUT="soon") if "HOROVOD" in fragment else BASE_ENV
    done = subprocess.run([PERSEUSRUN, "-np", "2"] + args + ["true"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
    assert done.returncode == 2 and fragment in done.stderr, done.stderr


def test_help_lists_the_elastic_options():
    done = subprocess.run([PERSEUSRUN, "--help"], stdout=subprocess.PIPE, universal_newlines=True, timeout=30)
    for flag in ("--min-np", "--min-num-proc", "--max-np", "--max-num-proc", "--host-discovery-script",
                 "--slots-per-host", "--elastic-timeout", "--reset-limit", "--blacklist-cooldown-range"):
        assert flag in done.stdout


def _read_until(job, text, timeout):
    """perseusrun's stderr up to the first line containing `text`."""
    seen, deadline = "", time.monotonic() + timeout
    while text not in seen:
        assert time.monotonic() < deadline and job.poll() is None, "no {!r} in:\n{}".format(text, seen)
        seen += job.stderr.readline()
    return seen


def test_a_host_leaving_discovery_stops_its_worker_and_the_rest_re_form(tmp_path):
    script, set_hosts = E.discovery_script(tmp_path, HOSTS4[:3])
    job = start(["-np", "2", "--min-np", "2", "--host-discovery-script", str(script), PYTHON, IDLE], tmp_path)
    try:
        _read_until(job, "generation 1 formed: 3 worker(s)", 60)
        set_hosts(HOSTS4[:2])
        seen = _read_until(job, "generation 2 formed: 2 worker(s)", 60)
        if "stops: its slot" not in seen:
            seen += _read_until(job, "stops: its slot", 30)
    finally:
        job.send_signal(signal.SIGTERM)
        code, out, err = finish(job, 60)
    assert "planning generation 2 with 2 worker(s) (hosts changed): 127.0.0.1:0, 127.0.0.2:0" in seen
    assert "worker 127.0.0.3:0 stops: its slot is not in generation 2" in seen + err
    assert "blacklisted" not in seen + err  # it left; it did not fail
    assert code == 128 + signal.SIGTERM


def test_training_that_ends_while_a_generation_is_planned_ends_the_job(tmp_path):
    """The workers end (exit 0) when they learn of a new host instead of joining again; the new worker, waiting
    for a generation that will not form, is told to stop: the job succeeds at once, not after the timeout."""
    script, set_hosts = E.discovery_script(tmp_path, HOSTS4[:2])
    job = start(["-np", "2", "--host-discovery-script", str(script), "--elastic-timeout", "40", PYTHON, IDLE],
                tmp_path, env={"ELASTIC_TEST_DONE_ON_UPDATE": "1"})
    _read_until(job, "generation 1 formed: 2 worker(s)", 60)
    began = time.monotonic()
    set_hosts(HOSTS4[:3])
    code, out, err = finish(job, 60)
    assert code == 0, err
    assert "planning generation 2 with 3 worker(s)" in err and "generation 2 formed" not in err
    assert "worker 127.0.0.3:0 stops: the job has finished" in err
    assert time.monotonic() - began < 20


def test_process_sets_registered_before_a_reset_are_refused_then_registered_again_torch(tmp_path):
    """tests/support/elastic.process_sets_story with torch: 4 workers, sets [0, 1] (from hvd.init) and [0, 3];
    rank 3 is SIGKILLed; the old sets are refused naming the reset, registered again they give the right sums."""
    E.process_sets_story(tmp_path, "torch", {})
