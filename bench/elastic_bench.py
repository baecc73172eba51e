"""Elastic perseusrun: how long the survivors take to re-form the job after a worker is lost, beside the steady
step time of the same training (tests/run/scripts/elastic_train.py: float64 linear regression, torch, hvd.elastic,
a commit every 2 steps; each step = backward + DistributedOptimizer allreduce + allgather_object of the batch's
indices, plus a commit's broadcast every second step).

One job, hosts 127.0.0.x with one slot each, -np 3 --min-np 2 --max-np 3. Five rounds: measure 20 steady steps
with 3 workers; SIGKILL the worker of the newest host (the discovery output holds no spare host, so the two
survivors re-form alone); read perseusrun's `generation N formed ..., X s after the worker loss` (the driver's
re-rendezvous time: loss seen -> every survivor has its new numbers) and time SIGKILL -> rank 0's first step
with 2 workers (end to end: error in the collective, restore, re-rendezvous, new engine, state sync, one step);
then add a new host and wait for the job to grow back to 3.

    .venv/bin/python bench/elastic_bench.py [--rounds 5]
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))
from support import elastic as E  # noqa: E402

PERSEUSRUN = str(Path(sys.executable).with_name("perseusrun"))
FORMED = re.compile(r"generation (\d+) formed: (\d+) worker\(s\), rendezvous took ([0-9.]+) s(?:, ([0-9.]+) s after the worker loss)?")


def steady_step_seconds(out: Path, steps: int, job: subprocess.Popen) -> float:
    start_step, size = E.progress(out)
    began = time.monotonic()
    E.wait_for(lambda: E.progress(out)[0] >= start_step + steps, "{} steps".format(steps), 120, job)
    return (time.monotonic() - began) / (E.progress(out)[0] - start_step)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="elastic-bench-"))
    hosts = ["127.0.0.1:1", "127.0.0.2:1", "127.0.0.3:1"]
    script, set_hosts = E.discovery_script(out, hosts)
    job = subprocess.Popen([PERSEUSRUN, "-np", "3", "--min-np", "2", "--max-np", "3", "--host-discovery-script",
                            str(script), "--elastic-timeout", "120", sys.executable, str(E.TRAIN), str(out), "1000000",
                            "0"], cwd=str(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True)
    formed = []
    lock = threading.Lock()

    def read_stderr() -> None:
        for line in job.stderr:
            match = FORMED.search(line)
            if match:
                with lock:
                    formed.append((int(match.group(2)), float(match.group(3)),
                                   float(match.group(4)) if match.group(4) else None))

    threading.Thread(target=read_stderr, daemon=True).start()
    steps, driver, end_to_end = [], [], []
    next_host = 4
    try:
        for round_ in range(args.rounds):
            E.wait_for(lambda: E.progress(out)[1] == 3, "3 workers", 180, job)
            steps.append(steady_step_seconds(out, 20, job))
            victim = hosts[-1].split(":")[0] + ":0"
            seen = len(formed)
            killed_at = time.monotonic()
            os.kill(E.worker_pid(out, victim), signal.SIGKILL)
            E.wait_for(lambda: E.progress(out)[1] == 2, "2 workers", 120, job)
            end_to_end.append(time.monotonic() - killed_at)
            E.wait_for(lambda: len(formed) > seen, "the driver's report", 30, job)
            driver.append(formed[seen][2])
            hosts = hosts[:-1] + ["127.0.0.{}:1".format(next_host)]
            next_host += 1
            set_hosts(hosts)
            print("round {}: steady step {:.2f} ms (3 workers), re-rendezvous {:.3f} s (driver), kill -> first "
                  "step with 2 workers {:.3f} s".format(round_ + 1, steps[-1] * 1e3, driver[-1], end_to_end[-1]),
                  flush=True)
    finally:
        job.send_signal(signal.SIGTERM)
        job.wait(60)
    print("median of {}: steady step {:.2f} ms, re-rendezvous {:.3f} s (driver), kill -> first step {:.3f} s".format(
        args.rounds, statistics.median(steps) * 1e3, statistics.median(driver), statistics.median(end_to_end)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
