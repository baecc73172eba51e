"""Helpers of the elastic tests (tests/run/test_elastic*.py, tests/tensorflow/test_tf_elastic.py) and
bench/elastic_bench.py: a discovery script that prints a file the test edits, progress of the training scripts
(tests/run/scripts/elastic_train.py for torch, tests/tensorflow/workers/tf_elastic_train.py for TensorFlow), and the
reference computation that replays their committed steps."""

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

TRAIN = Path(__file__).resolve().parents[1] / "run" / "scripts" / "elastic_train.py"
SAMPLES, FEATURES, LR = 48, 4, 0.05


PERSEUSRUN = str(Path(sys.executable).with_name("perseusrun"))
BASE_ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}


def start(args: Sequence[str], cwd: Path, env: Optional[Dict[str, str]] = None,
          prefix: Sequence[str] = ()) -> subprocess.Popen:
    """perseusrun ARGS (the one next to this Python) in `cwd`, with a bare environment plus `env`; `prefix`: the
    argv that runs it elsewhere (a network namespace: netns_hosts.Hosts.in_ns)."""
    return subprocess.Popen(list(prefix) + [PERSEUSRUN] + list(args), cwd=str(cwd), env=dict(BASE_ENV, **(env or {})),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def finish(job: subprocess.Popen, timeout: float) -> Tuple[int, str, str]:
    """(exit code, stdout, stderr) of a job started by start(); fails if it runs past `timeout` seconds."""
    try:
        out, err = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        job.kill()
        out, err = job.communicate()
        raise AssertionError("perseusrun did not end within {} s:\n{}".format(timeout, err[-3000:]))
    return job.returncode, out, err


def discovery_script(folder: Path, hosts: Sequence[str]) -> Tuple[Path, Callable[[Sequence[str]], None]]:
    """(the script, set_hosts): the script prints folder/hosts; set_hosts rewrites that file atomically."""
    listing = folder / "hosts"

    def set_hosts(lines: Sequence[str]) -> None:
        partial = folder / "hosts.partial"
        partial.write_text("".join(line + "\n" for line in lines))
        os.replace(str(partial), str(listing))

    set_hosts(hosts)
    script = folder / "discover_hosts.sh"
    script.write_text("#!/bin/sh\ncat {}\n".format(listing))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, set_hosts


def progress(out: Path) -> Tuple[int, int]:
    """(committed-or-not step, world size) rank 0 last wrote; (0, 0) before the first step."""
    try:
        step, size = (out / "progress").read_text().split()
        return int(step), int(size)
    except (OSError, ValueError):
        return 0, 0


def wait_for(condition: Callable[[], bool], what: str, timeout: float, job: Optional[subprocess.Popen] = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if job is not None and job.poll() is not None:
            raise AssertionError("the job ended (code {}) while waiting for {}".format(job.returncode, what))
        time.sleep(0.05)
    raise AssertionError("timed out after {} s waiting for {}".format(timeout, what))


def worker_pid(out: Path, worker: str) -> int:
    return int((out / "pid.{}".format(worker.replace(":", "_"))).read_text())


def lose_one_then_grow_back(out: Path, job: subprocess.Popen, set_hosts: Callable[[Sequence[str]], None],
                            hosts: Sequence[str], new_host: str, timeout: float) -> Optional[AssertionError]:
    """The kill-and-grow-back story on a job of len(hosts) workers, one slot per host, that hold after step 8
    (ELASTIC_TEST_HOLD=8, reaching every worker): the last host's worker is SIGKILLed there and the host leaves the
    discovery output; the rest go on from the last commit and hold again after step 8; `new_host` (HOST:1) appears,
    its worker starts, and the hold is released: the job grows back. Returns the first failed wait (None: all
    happened); each wait gives up after `timeout` seconds."""
    n, victim = len(hosts), hosts[-1].rpartition(":")[0] + ":0"
    try:
        wait_for(lambda: progress(out) == (8, n), "{} workers holding after step 8".format(n), timeout, job)
        os.kill(worker_pid(out, victim), signal.SIGKILL)
        set_hosts(hosts[:-1])
        wait_for(lambda: progress(out) == (8, n - 1), "{} workers at step 8".format(n - 1), timeout, job)
        set_hosts(list(hosts[:-1]) + [new_host])
        joined = new_host.rpartition(":")[0] + ":0"
        wait_for(lambda: (out / "pid.{}".format(joined.replace(":", "_"))).exists(),
                 "a worker started on " + joined, timeout, job)
        (out / "go.8").write_text("")
        wait_for(lambda: progress(out)[1] == n, "the job grown back to {} workers".format(n), timeout, job)
    except AssertionError as error:
        return error
    return None


def namespaces_lose_one_then_grow_back(out: Path, hosts: Any, ssh_port: int, exports: Sequence[str],
                                       worker: Sequence[str], timeout: float) -> Tuple[str, Dict]:
    """lose_one_then_grow_back across the network namespaces of tests/support/netns_hosts.py (`hosts`, 5 of them):
    hosts 0-3 train (perseusrun and worker 0 in host 0's namespace, the others over ssh in their own), each worker
    checked to run in its host's namespace; host 3's worker is killed, host 4 grows the job back. `exports`: the
    perseusrun arguments that hand variables to the remote workers (-x NAME=VALUE ..., ELASTIC_TEST_HOLD=8 among
    them); `worker`: the training command. Returns the job's stdout and result.json."""
    lines = [a + ":1" for a in hosts.addrs]
    script, set_hosts = discovery_script(out, lines[:4])
    job = start(["-np", "4", "--min-np", "3", "--max-np", "4", "--host-discovery-script", str(script),
                 "--elastic-timeout", str(int(timeout)), "-p", str(ssh_port), "--ssh-config", hosts.ssh_config]
                + list(exports) + list(worker), out, prefix=hosts.in_ns(0))
    wait_for(lambda: progress(out) == (8, 4), "4 workers holding after step 8", timeout + 60, job)
    for i in range(4):
        pid = worker_pid(out, hosts.addrs[i] + ":0")
        assert pid in hosts.pids_in(i), "worker {} runs in host {}'s namespace".format(i, i)
    failed = lose_one_then_grow_back(out, job, set_hosts, lines[:4], lines[4], timeout)
    code, stdout, err = finish(job, timeout + 60)
    assert failed is None, "{}\n{}".format(failed, err[-4000:])
    assert code == 0, err[-3000:]
    assert "worker {}:0 exited with code 137".format(hosts.addrs[3]) in err  # over ssh: the remote shell's 128 + 9
    return stdout, result(out)


PROCESS_SETS = Path(__file__).resolve().parents[1] / "run" / "scripts" / "elastic_process_sets.py"


def process_sets_story(out: Path, framework: str, env: Dict[str, str]) -> None:
    """elastic_process_sets.py (torch or tensorflow) on hosts 127.0.0.1-4: 4 workers with the sets [0, 1] (from
    hvd.init(process_sets=...)) and [0, 3] (hvd.add_process_set); rank 3, a member of the second, is SIGKILLed holding
    after step 5 and its host leaves. The reset ends promptly (well within GLOO_TIMEOUT_SECONDS 60), a collective
    on either old set is refused naming the reset, and the sets registered again in a reset callback give the
    right sums over the 3 workers; the first 4 steps gave them over 4. With torch, a DistributedOptimizer over the
    first set averages over its members before and after the reset."""
    hosts = ["127.0.0.{}:1".format(i) for i in range(1, 5)]
    script, set_hosts = discovery_script(out, hosts)
    job = start(["-np", "4", "--min-np", "3", "--max-np", "4", "--host-discovery-script", str(script),
                 "--elastic-timeout", "60", "--reset-limit", "2", sys.executable, str(PROCESS_SETS), str(out), "8",
                 framework], out,
                env=dict(env, ELASTIC_TEST_HOLD="5", GLOO_TIMEOUT_SECONDS="60"))
    failed = None
    try:
        wait_for(lambda: progress(out) == (5, 4), "4 workers holding after step 5", 150, job)
        os.kill(worker_pid(out, "127.0.0.4:0"), signal.SIGKILL)
        killed_at = time.monotonic()
        set_hosts(hosts[:3])
        wait_for(lambda: progress(out) == (5, 3), "3 workers at step 5", 60, job)
        assert time.monotonic() - killed_at < 20, "the reset waited for a timeout"
        (out / "go.5").write_text("")
    except AssertionError as error:
        failed = error
    code, _, err = finish(job, 150)
    assert failed is None, "{}\n{}".format(failed, err[-4000:])
    assert code == 0, err[-3000:]
    got = result(out)
    assert [step["size"] for step in got["history"]] == [4] * 4 + [3] * 4  # steps 5 and 6 were lost and redone
    for step in got["history"]:
        size = step["size"]
        expected = {"first": [0, 1], "last": [0, size - 1]}
        for rank, row in enumerate(step["ranks"]):
            assert row["global"] == sum(range(1, size + 1))
            for name, ranks in expected.items():
                if rank in ranks:
                    assert row[name] == [ranks, float(sum(r + 1 for r in ranks))], (step, rank, name)
                else:
                    assert name not in row, (step, rank, name)
            if framework == "torch":  # DistributedOptimizer(process_set=first): the members' mean, else its own
                assert row["grad"] == (1.5 if rank in (0, 1) else rank + 1.0), (step, rank, row["grad"])
    assert [r.partition(":")[0] for r in got["refusals"]] == ["first", "last"], got["refusals"]
    for refusal in got["refusals"]:
        assert "is not registered any more: it was closed by an elastic reset" in refusal, refusal
        assert "e.g. in a reset callback (state.register_reset_callbacks)" in refusal, refusal


def data() -> Tuple[np.ndarray, np.ndarray]:
    """The training data of elastic_train.py, drawn by torch's generator there: read back from the script."""
    import torch

    g = torch.Generator().manual_seed(1)
    x = torch.randn(SAMPLES, FEATURES, generator=g, dtype=torch.float64)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64) + 0.1 * torch.randn(SAMPLES, generator=g, dtype=torch.float64)
    return x.numpy(), y.numpy()


def replay(history: List[Dict], xy: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> np.ndarray:
    """The weights after the committed steps of `history`, computed by numpy: each step averages the ranks'
    mean-squared-error gradients over their own samples, then takes one SGD step. xy: the training data (default:
    the torch script's, data())."""
    x, y = data() if xy is None else xy
    w = np.zeros(FEATURES)
    for step in history:
        grads = [2.0 * x[part].T @ (x[part] @ w - y[part]) / len(part) for part in step["parts"]]
        w = w - LR * np.mean(grads, axis=0)
    return w


def result_data(result: Dict) -> Tuple[np.ndarray, np.ndarray]:
    """The training data a script wrote into its result.json (the TensorFlow script does)."""
    return np.array(result["x"], dtype=np.float64), np.array(result["y"], dtype=np.float64)


def result(out: Path) -> Dict:
    return json.loads((out / "result.json").read_text())
