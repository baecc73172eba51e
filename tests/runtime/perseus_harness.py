"""Run a worker script as N real processes, the way torchrun would start them (RANK, WORLD_SIZE, ...).

Each rank writes its results as JSON to $PERSEUS_TEST_OUT; `launch()` returns them in rank order.
Nodes are simulated on this machine with LOCAL_WORLD_SIZE and GROUP_RANK, as torchrun sets them.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from support.ports import free_port  # noqa: F401  (the harness's callers import it from here)

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).resolve().parent / "workers"
SOURCE_PATHS = [REPO_ROOT / "native" / "runtime", REPO_ROOT / "native" / "bindings" / "torch", WORKERS]


def python_path() -> str:
    extra = os.environ.get("PYTHONPATH")
    return os.pathsep.join([str(p) for p in SOURCE_PATHS] + ([extra] if extra else []))


@dataclass
class RankResult:
    rank: int
    returncode: int
    stdout: str
    stderr: str
    output: Optional[Dict[str, Any]]


class LaunchFailed(AssertionError):
    pass


def launch(script: str, nprocs: int, args: Sequence[str] = (), env: Optional[Dict[str, Optional[str]]] = None,
           local_size: Optional[int] = None, timeout: float = 120.0, check: bool = True,
           python: str = sys.executable) -> List[RankResult]:
    """Start `nprocs` ranks of workers/<script> with `python`; wait for all; return their results."""
    local_size = local_size or nprocs
    master_port, perseus_port = free_port(), free_port()
    while perseus_port == master_port:
        perseus_port = free_port()
    with tempfile.TemporaryDirectory(prefix="perseus-test-") as tmp:
        procs = []
        for rank in range(nprocs):
            rank_env = dict(os.environ)
            rank_env.update({
                "RANK": str(rank), "WORLD_SIZE": str(nprocs), "LOCAL_RANK": str(rank % local_size),
                "LOCAL_WORLD_SIZE": str(local_size), "GROUP_RANK": str(rank // local_size),
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master_port), "PERSEUS_MASTER_PORT": str(perseus_port),
                "PYTHONPATH": python_path(), "PERSEUS_TEST_OUT": os.path.join(tmp, "rank{}.json".format(rank)),
                "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "default",
            })
            for name, value in (env or {}).items():  # None removes a variable
                if value is None:
                    rank_env.pop(name, None)
                else:
                    rank_env[name] = value
            path = Path(script) if os.path.isabs(script) else WORKERS / script
            procs.append(subprocess.Popen([python, str(path)] + list(args), env=rank_env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          start_new_session=True))
        deadline = time.monotonic() + timeout
        outputs = []
        timed_out = False
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                for other in procs:  # stacks first (workers dump them on SIGUSR1), then kill
                    if other.poll() is None:
                        os.kill(other.pid, signal.SIGUSR1)
                time.sleep(1.0)
                for other in procs:
                    if other.poll() is None:
                        os.killpg(other.pid, signal.SIGKILL)
                out, err = proc.communicate()
            outputs.append((out, err))
        results = []
        for rank, (proc, (out, err)) in enumerate(zip(procs, outputs)):
            path = os.path.join(tmp, "rank{}.json".format(rank))
            data = json.load(open(path)) if os.path.exists(path) else None
            results.append(RankResult(rank, proc.returncode, out, err, data))
    if timed_out:
        raise LaunchFailed("{} timed out after {}s:\n{}".format(script, timeout, _tails(results)))
    if check and any(r.returncode != 0 for r in results):
        raise LaunchFailed("{} failed:\n{}".format(script, _tails(results)))
    return results


def _tails(results: List[RankResult]) -> str:
    return "\n".join("--- rank {} (rc {}) ---\n{}\n{}".format(r.rank, r.returncode, r.stdout[-3000:], r.stderr[-6000:])
                     for r in results)
