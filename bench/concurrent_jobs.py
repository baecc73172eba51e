"""Jobs side by side on one machine: per round, two 2-rank DDP jobs (`import perseus`, each on its own free
MASTER_PORT, ranks started directly as torchrun would) and two `perseusrun -np 2` jobs, all four started at
the same instant. Prints per round which jobs failed and, at the end, the rounds in which all four succeeded.
A job also fails when its ranks did not run on perseus's native engine: the DDP jobs' engines on the port
rank 0 picked (DDP's hook through perseus's completion thread), the perseusrun jobs' on the store perseusrun
serves (exit_worker.py prints the `path:` line checked here).

    .venv/bin/python bench/concurrent_jobs.py [--rounds 10]
"""

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

REPO_ROOT = Path(__file__).resolve().parents[1]
WORKER = str(Path(__file__).resolve().with_name("exit_worker.py"))
SOURCES = [REPO_ROOT / "native" / "runtime", REPO_ROOT / "native" / "bindings" / "torch"]
BASE_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in SOURCES), OMP_NUM_THREADS="1")
for _name in ("MASTER_ADDR", "MASTER_PORT", "PERSEUS_MASTER_PORT"):
    BASE_ENV.pop(_name, None)


def free_ports(count: int) -> List[int]:
    """`count` distinct free ports, each bound until all are chosen."""
    sockets = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def start_round() -> Dict[str, List["subprocess.Popen[str]"]]:
    jobs: Dict[str, List["subprocess.Popen[str]"]] = {}
    for name, port in zip(("ddp-a", "ddp-b"), free_ports(2)):
        jobs[name] = [subprocess.Popen(
            [sys.executable, WORKER, "ddp", "--perseus", "--destroy"],
            env=dict(BASE_ENV, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True) for rank in range(2)]
    for name in ("perseusrun-a", "perseusrun-b"):
        jobs[name] = [subprocess.Popen(
            [sys.executable, "-m", "perseus.run", "-np", "2", sys.executable, WORKER, "hvd"], env=BASE_ENV,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)]
    return jobs


def expected_paths(name: str) -> List[str]:
    how, completions = ("picked", "ran") if name.startswith("ddp") else ("perseusrun", "idle")
    return ["path: engine rank {}/2 store {} completions {}".format(r, how, completions) for r in range(2)]


def finish(jobs: Dict[str, List["subprocess.Popen[str]"]], timeout: float) -> Dict[str, str]:
    """'' for a job whose processes all exited 0, else the tail of what they printed."""
    outcome = {}
    deadline = time.monotonic() + timeout
    for name, procs in jobs.items():
        failures = []
        paths: List[str] = []
        for proc in procs:
            try:
                out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
                failures.append("timed out\n" + out[-1500:])
                continue
            if proc.returncode != 0:
                failures.append("exit {}\n{}".format(proc.returncode, out[-1500:]))
            paths += [line[line.index("path: "):].strip() for line in out.splitlines() if "path: " in line]
        if not failures and sorted(paths) != expected_paths(name):
            failures.append("not on the engine path: {}".format(paths))
        outcome[name] = "\n".join(failures)
    return outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args()
    clean = 0
    for round_number in range(1, args.rounds + 1):
        started = time.monotonic()
        outcome = finish(start_round(), args.timeout)
        failed = [name for name, text in outcome.items() if text]
        clean += not failed
        print("round {:2d}: {} ({:.1f} s)".format(round_number, "all 4 jobs exit 0" if not failed else
                                                   "FAILED: " + ", ".join(failed), time.monotonic() - started),
              flush=True)
        for name in failed:
            print("--- {} ---\n{}".format(name, outcome[name]), flush=True)
    print("{} of {} rounds: all four jobs succeeded".format(clean, args.rounds))
    return 0 if clean == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
