"""The Open MPI mpirun command of `perseusrun --mpi`: MPI starts and numbers the processes (OMPI_COMM_WORLD_*),
torch.distributed's Gloo/NCCL carries the tensors (the ranks read their numbers with perseus.launch.detect(),
which cross-checks OMPI_COMM_WORLD_* against the torchrun variables the shim below derives from them)."""

import os
import shutil
import subprocess
from typing import Dict, List, Optional, Sequence

from .errors import UsageError
from .hosts import HostSlots

# Run by mpirun in front of the command: gives each rank the torchrun variables too (RANK, LOCAL_RANK,
# LOCAL_WORLD_SIZE, GROUP_RANK/NODE_RANK), so env:// scripts run unchanged under --mpi. The node index
# counts the hosts whose first rank (FIRSTS, from the plan's by-slot placement) is <= this rank. The
# command runs in its own process group: Open MPI's SIGTERM is passed on to all of it, and whatever the
# rank leaves behind when it exits (its own children) is killed, as in Gloo mode.
RANK_SHIM = ('export RANK="$OMPI_COMM_WORLD_RANK" LOCAL_RANK="$OMPI_COMM_WORLD_LOCAL_RANK" '
             'LOCAL_WORLD_SIZE="$OMPI_COMM_WORLD_LOCAL_SIZE"; n=-1; for f in FIRSTS; do '
             '[ "$OMPI_COMM_WORLD_RANK" -ge "$f" ] && n=$((n+1)); done; export GROUP_RANK="$n" NODE_RANK="$n"; '
             'if command -v setsid >/dev/null 2>&1; then setsid "$@" & else "$@" & fi; c=$!; '
             'trap \'kill -TERM -"$c" 2>/dev/null || kill -TERM "$c" 2>/dev/null\' TERM INT HUP; '
             'while :; do wait "$c"; s=$?; kill -0 "$c" 2>/dev/null || break; done; '
             'kill -KILL -"$c" 2>/dev/null; exit "$s"')


def mpirun_argv(hosts: Sequence[HostSlots], first_ranks: Sequence[int], np: int, env: Dict[str, str], forwarded_names: Sequence[str],
                btl_interface: Optional[str], ssh_port: Optional[int], log_dir: Optional[str],
                extra: Sequence[str], command: Sequence[str]) -> List[str]:
    argv = ["mpirun"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")  # Open MPI refuses root without it
    argv += ["-np", str(np), "-H", ",".join("{}:{}".format(h.host, h.slots) for h in hosts),
             "--bind-to", "none", "--map-by", "slot", "--tag-output"]
    for name, value in sorted(env.items()):
        argv += ["-x", "{}={}".format(name, value)]
    for name in forwarded_names:
        if name not in env:
            argv += ["-x", name]
    if btl_interface:
        argv += ["--mca", "btl_tcp_if_include", btl_interface]
    if ssh_port:
        argv += ["--mca", "plm_rsh_args", "-p {}".format(ssh_port)]
    if log_dir:
        argv += ["--output-filename", log_dir]
    shim = RANK_SHIM.replace("FIRSTS", " ".join(str(f) for f in first_ranks))
    return argv + list(extra) + ["sh", "-c", shim, "perseus-rank"] + list(command)


def check_open_mpi() -> str:
    """The path of Open MPI's mpirun, or a UsageError saying what to install."""
    path = shutil.which("mpirun")
    if path is None:
        raise UsageError("--mpi needs Open MPI's mpirun on PATH (Debian/Ubuntu: apt-get install openmpi-bin; "
                         "CentOS: yum install openmpi and add /usr/lib64/openmpi/bin to PATH), or drop --mpi to use Gloo")
    try:
        out = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError("--mpi: cannot run {} --version ({})".format(path, exc)) from None
    if "Open MPI" not in out and "OpenRTE" not in out:
        raise UsageError("--mpi drives Open MPI, but {} is not Open MPI ({}); put Open MPI's mpirun first on PATH".format(
            path, out.strip().splitlines()[0] if out.strip() else "no version output"))
    return path
