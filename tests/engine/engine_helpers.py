"""Starting engine test jobs: under perseusrun (the project's launcher) or as bare processes with
torchrun-style variables, on 127.0.0.1 with free ports; reading the ranks' REPORT lines."""

import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from support.ports import free_ports

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "workers" / "engine_cases.py"
PERSEUSRUN = str(Path(sys.executable).with_name("perseusrun"))
LINE = re.compile(r"^\[(\d+)\]<stdout>:(.*)$")


def base_env(library: str, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    launcher_prefixes = ("PERSEUS_", "GLOO_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "GROUP_", "NODE_RANK",
                         "OMPI_", "PMI_", "MPI_LOCAL", "MV2_", "HYDRA_", "SLURM_", "HOROVOD_", "PADDLE_", "DMLC_",
                         "BYTEPS_", "MA_", "VC_", "ASCEND_", "RANK_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(launcher_prefixes)}
    env.update({"PERSEUS_ENGINE_LIBRARY": library, "PYTHONPATH": str(REPO_ROOT / "native" / "runtime"),
                "GLOO_TIMEOUT_SECONDS": "30"})
    env.update(extra or {})
    return env


def perseusrun(library: str, np: int, case: str, env: Optional[Dict[str, str]] = None,
               hosts: Optional[str] = None, timeout: float = 180, wrap: Sequence[str] = ()) -> subprocess.CompletedProcess:
    """`wrap`: a command line perseusrun's own is appended to (unshare ...)."""
    master, perseus = free_ports(2)
    full = base_env(library, dict({"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(perseus)}, **(env or {})))
    args = list(wrap) + [PERSEUSRUN, "-np", str(np)] + (["-H", hosts] if hosts else []) + ["--", sys.executable, str(WORKER), case]
    return subprocess.run(args, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout)


def reports(stdout: str) -> List[dict]:
    found = []
    for line in stdout.splitlines():
        m = LINE.match(line)
        if m and m.group(2).startswith("REPORT "):
            # raw_decode: Open MPI's --tag-output can glue an empty tagged line onto the end of a report
            found.append(json.JSONDecoder().raw_decode(m.group(2)[len("REPORT "):])[0])
    return sorted(found, key=lambda r: r["rank"])


def bare_with(library: str, case: str, rank_envs: Sequence[Dict[str, str]], argv: Sequence[Sequence[str]] = (),
              timeout: float = 120) -> List[subprocess.CompletedProcess]:
    """Ranks started with exactly the given per-rank variables (a launcher's), waited for."""
    procs = []
    for rank, extra in enumerate(rank_envs):
        args = list(argv[rank]) if argv else []
        procs.append(subprocess.Popen([sys.executable, str(WORKER), case] + args, env=base_env(library, extra),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                                      start_new_session=True))
    done = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return done


def bare(library: str, np: int, case: str, env: Optional[Dict[str, str]] = None,
         timeout: float = 120) -> List[subprocess.Popen]:
    """The ranks as plain processes (torchrun's variables): nothing kills a rank when another dies."""
    master, perseus = free_ports(2)
    procs = []
    for rank in range(np):
        rank_env = base_env(library, {"RANK": str(rank), "WORLD_SIZE": str(np), "LOCAL_RANK": str(rank),
                                      "LOCAL_WORLD_SIZE": str(np), "GROUP_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                                      "MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(perseus)})
        rank_env.update(env or {})
        procs.append(subprocess.Popen([sys.executable, str(WORKER), case], env=rank_env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True, start_new_session=True))
    return procs


def half(x: float) -> float:
    """x rounded to IEEE fp16 (round to nearest even), as the engine's wire does."""
    return struct.unpack("<e", struct.pack("<e", x))[0]


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]
