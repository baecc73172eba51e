"""Precedence, cross-checks and completion: from the readings of every launcher to one LaunchEnv."""

import os
import sys
from typing import Callable, List, Mapping, Optional, Sequence

from .ascend import read_ascend
from .byteps import read_byteps
from .horovod import read_horovod
from .model import LaunchEnv, LaunchEnvironmentError, Reading
from .modelarts import read_modelarts
from .mpi import read_mpich, read_mvapich, read_openmpi
from .paddle import read_paddle
from .slurm import read_slurm
from .torchrun import read_torchrun
from .values import Vars

Detector = Callable[[Vars, Sequence[str]], Optional[Reading]]

# Precedence, innermost launcher first: a launcher started *by* another one (torchrun under srun,
# horovodrun's ranks under mpirun) sets the more specific numbers, so it wins. Documented in README.md.
DETECTORS: List[Detector] = [
    read_torchrun,   # torchrun / torch.distributed.launch / perseusrun (Gloo mode)
    read_horovod,    # horovodrun
    read_openmpi,    # mpirun of Open MPI (and perseusrun --mpi)
    read_mvapich,    # mpirun_rsh / mpiexec of MVAPICH2
    read_mpich,      # mpiexec (Hydra) of MPICH / Intel MPI, srun --mpi=pmi2
    read_slurm,      # srun tasks
    read_paddle,     # paddle.distributed.launch
    read_ascend,     # Ascend rank table jobs (ModelArts Ascend-Powered-Engine, MindSpore)
    read_modelarts,  # ModelArts PyTorch-GPU boot command (node level)
    read_byteps,     # BytePS / DMLC workers (node level unless BYTEPS_LOCAL_RANK)
]
NUMBERS = ("local_rank", "local_size", "node_rank")


def detect(environ: Optional[Mapping[str, str]] = None, argv: Optional[Sequence[str]] = None) -> LaunchEnv:
    """The launch environment of this process; a single process (rank 0 of 1) when no launcher is found.

    `environ` defaults to os.environ, `argv` to sys.argv[1:] (ModelArts appends its arguments there).
    Raises LaunchEnvironmentError, naming the variables, when the launchers' numbers are malformed or
    contradict each other.
    """
    v = Vars(os.environ if environ is None else environ)
    argv = list(sys.argv[1:] if argv is None else argv)
    readings = [found for found in (detector(v, argv) for detector in DETECTORS) if found is not None]
    if not readings:
        return _single(v)
    primary = readings[0]
    _require(primary)
    for other in readings[1:]:
        _require(other)
        _check_and_fill(primary, other)
    _fill_master(primary, readings[1:])
    return _validate(_complete(primary, v))


def _require(r: Reading) -> None:
    if r.rank is None or r.size is None:
        missing = "rank" if r.rank is None else "size"
        raise LaunchEnvironmentError("{} launch variables found but they give no {} ({})".format(
            r.launcher, missing, ", ".join(sorted(r.sources.values())) or "nothing else set"))


def _check_and_fill(primary: Reading, other: Reading) -> None:
    """Two process-level launchers describing this process must agree; an outer one may be smaller."""
    if not (primary.process_level and other.process_level):
        return
    if other.size > primary.size:
        raise LaunchEnvironmentError(
            "two launchers disagree: {} says the job has {} processes but {} started {}; "
            "unset the variables of the launcher that did not start this process".format(
                primary.describe(), primary.size, other.describe(), other.size))
    if other.size < primary.size:  # e.g. `srun -N2 torchrun --nproc_per_node 8`: srun started the torchruns
        primary.sources.setdefault("outer_launchers", "")
        primary.sources["outer_launchers"] = ", ".join(filter(None, [primary.sources["outer_launchers"], other.describe()]))
        return
    if other.rank != primary.rank:
        raise LaunchEnvironmentError("two launchers disagree on this process's rank: {} but {}".format(
            primary.describe(), other.describe()))
    for name in NUMBERS:
        mine, theirs = getattr(primary, name), getattr(other, name)
        if mine is None and theirs is not None:
            primary.put(name, theirs, "{} (from {})".format(other.sources[name], other.launcher))
        elif mine is not None and theirs is not None and mine != theirs:
            raise LaunchEnvironmentError("two launchers disagree on the {}: {} ({}) but {} ({})".format(
                name.replace("_", " "), primary.sources[name], primary.launcher, other.sources[name], other.launcher))


def _fill_master(primary: Reading, others: Sequence[Reading]) -> None:
    for name in ("master_addr", "master_port"):
        if getattr(primary, name) is None:
            for other in others:
                if getattr(other, name) is not None:
                    primary.put(name, getattr(other, name), "{} (from {})".format(other.sources[name], other.launcher))
                    break


def _complete(r: Reading, v: Vars) -> LaunchEnv:
    if r.master_addr is None and v.has("MASTER_ADDR"):
        r.put("master_addr", v.text("MASTER_ADDR"), v.src("MASTER_ADDR"))
    if r.master_port is None and v.has("MASTER_PORT"):
        r.put("master_port", v.port("MASTER_PORT"), v.src("MASTER_PORT"))
    if r.local_size is None:
        if r.node_rank is not None and r.node_rank > 0:
            raise LaunchEnvironmentError("{} gives node {} ({}) but no local size: set LOCAL_WORLD_SIZE".format(
                r.launcher, r.node_rank, r.sources["node_rank"]))
        r.put("local_size", r.size, "{} (assumed one node: {} gives no local size)".format(r.sources["size"], r.launcher))
    if r.local_rank is None:
        if r.node_rank is not None:
            r.put("local_rank", r.rank - r.node_rank * r.local_size, "rank - node rank x local size")
        else:
            r.put("local_rank", r.rank % r.local_size, "rank % local size ({} gives no local rank)".format(r.launcher))
    if r.node_rank is None:
        r.put("node_rank", r.rank // r.local_size, "rank // local size ({} gives no node index)".format(r.launcher))
    if r.master_addr is None:
        r.sources["master_addr"] = "not set ({} gives none; set MASTER_ADDR)".format(r.launcher)
    if r.master_port is None:
        r.sources["master_port"] = "not set ({} gives none; set MASTER_PORT)".format(r.launcher)
    return LaunchEnv(r.launcher, r.rank, r.size, r.local_rank, r.local_size, r.node_rank,
                     r.master_addr, r.master_port, dict(r.sources))


def _single(v: Vars) -> LaunchEnv:
    reason = "no launcher detected: a single process"
    sources = {"rank": reason, "size": reason, "local_rank": reason, "local_size": reason, "node_rank": reason}
    addr = v.text("MASTER_ADDR") if v.has("MASTER_ADDR") else None
    port = v.port("MASTER_PORT") if v.has("MASTER_PORT") else None
    sources["master_addr"] = v.src("MASTER_ADDR") if addr else "not set"
    sources["master_port"] = v.src("MASTER_PORT") if port else "not set"
    return LaunchEnv("single", 0, 1, 0, 1, 0, addr, port, sources)


def _validate(env: LaunchEnv) -> LaunchEnv:
    s = env.sources
    if not 0 <= env.rank < env.size:
        raise LaunchEnvironmentError("rank {} ({}) is not below the world size {} ({})".format(
            env.rank, s.get("rank"), env.size, s.get("size")))
    if not 0 <= env.local_rank < env.local_size:
        raise LaunchEnvironmentError("local rank {} ({}) is not below the local size {} ({})".format(
            env.local_rank, s.get("local_rank"), env.local_size, s.get("local_size")))
    if env.local_size > env.size:
        raise LaunchEnvironmentError("local size {} ({}) exceeds the world size {} ({})".format(
            env.local_size, s.get("local_size"), env.size, s.get("size")))
    if not 0 <= env.node_rank < env.size:
        raise LaunchEnvironmentError("node rank {} ({}) is not below the world size {} ({})".format(
            env.node_rank, s.get("node_rank"), env.size, s.get("size")))
    return env
