"""The job plan: which rank runs where, with which variables and which command. `--dry-run` prints it."""

import os
import shlex
import shutil
from dataclasses import asdict, dataclass, field, replace
from typing import Dict, List, Mapping, Optional

from perseus.launch.torchrun import PERSEUSRUN_MARKER  # PERSEUS_LAUNCHER=perseusrun: detect() names the launcher

from . import environment, ports
from .errors import CommandNotFound, UsageError
from .hosts import HostSlots, is_local, is_loopback, parse_hostfile, parse_hosts, resolve_error
from .mpi import mpirun_argv
from .options import Options
from .ssh import remote_command, ssh_argv
from .store import VARIABLE as STORE_VARIABLE



@dataclass
class RankPlan:
    rank: int
    host: str
    local_rank: int
    local_size: int
    node_rank: int
    launch: str  # "local" (a child of perseusrun), "ssh" (over ssh) or "mpirun" (started by Open MPI)
    env: Dict[str, str]  # what perseusrun sets or forwards for this rank (local ranks also inherit the rest)
    command: List[str]  # what perseusrun runs for this rank


@dataclass
class JobPlan:
    mode: str
    np: int
    hosts: List[HostSlots]
    master_addr: str
    master_port: int
    perseus_master_port: Optional[int]  # None: perseus joins torch's rendezvous on MASTER_PORT
    gloo_timeout_seconds: float
    workdir: str
    log_dir: Optional[str]
    ssh_port: Optional[int] = None
    ranks: List[RankPlan] = field(default_factory=list)
    mpirun: Optional[List[str]] = None
    notes: List[str] = field(default_factory=list)
    held_port: Optional[ports.HeldPort] = field(default=None, repr=False, compare=False)
    master_local: bool = False  # the master host is this machine: perseusrun can serve the store there
    store_address: Optional[str] = None  # PERSEUS_STORE_ADDR: the store perseusrun serves (store.py)

    def to_dict(self) -> Dict[str, object]:
        found = asdict(replace(self, held_port=None))
        found.pop("held_port")
        return found

    def terminate_grace(self) -> float:
        """SIGTERM -> SIGKILL delay: short, and always well inside GLOO_TIMEOUT_SECONDS."""
        return min(5.0, self.gloo_timeout_seconds / 4)


def build(options: Options, environ: Mapping[str, str], store_address: Optional[str] = None) -> JobPlan:
    hosts = _hosts(options)
    slots = sum(h.slots for h in hosts)
    if options.np > slots:
        raise UsageError("-np {} needs {} slots but {} gives only {} ({}); raise the slots or lower -np".format(
            options.np, options.np, "--hostfile " + options.hostfile if options.hostfile else "-H",
            slots, ",".join("{}:{}".format(h.host, h.slots) for h in hosts)))
    placement = _place(hosts, options.np)
    used = [h for h in hosts if placement[h.host]]
    multi = len(used) > 1
    if multi:
        loop = [h.host for h in used if is_loopback(h.host)]
        if loop:
            raise UsageError("-H: {} is a loopback name but the job spans {} hosts; give every host by the address "
                             "the others reach it at (e.g. its internal IP)".format(loop[0], len(used)))
        for h in used:
            reason = resolve_error(h.host)
            if reason:
                raise UsageError("host {} cannot be resolved ({}); check the name or give its IP address".format(h.host, reason))
    local = {h.host: is_local(h.host) for h in used}
    master_host = used[0].host
    master_addr = environ.get("MASTER_ADDR", "").strip() or ("127.0.0.1" if is_loopback(master_host) else master_host)
    chosen_ports = ports.choose(environ, master_is_local=local[master_host])
    timeout = environment.gloo_timeout(environ)
    nics = environment.interfaces(environ, check_local=any(local.values()) and options.mode == "gloo")
    extra = environment.exports(options.exports, environ)
    environment.validate_perseus_variables(environ)
    plan = JobPlan(options.mode, options.np, hosts, master_addr, chosen_ports.master_port,
                   chosen_ports.perseus_master_port, timeout, os.getcwd(), options.log_dir, options.ssh_port,
                   notes=list(options.notes) + list(chosen_ports.notes), held_port=chosen_ports.held,
                   master_local=local[master_host], store_address=store_address)
    common = {
        "WORLD_SIZE": str(options.np),
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(plan.master_port),
        PERSEUSRUN_MARKER[0]: PERSEUSRUN_MARKER[1],
        "GROUP_WORLD_SIZE": str(len(used)),
    }
    if plan.perseus_master_port is not None:
        common["PERSEUS_MASTER_PORT"] = str(plan.perseus_master_port)
    if store_address is not None:
        common[STORE_VARIABLE] = store_address
        plan.notes.append("perseusrun serves the engine's rendezvous store at {} ({}); no rank serves one".format(
            store_address, STORE_VARIABLE))
    common.update(nics)
    if "OMP_NUM_THREADS" not in environ and max(len(placement[h.host]) for h in used) > 1:
        common["OMP_NUM_THREADS"] = "1"  # as torchrun: N ranks per host must not each start one thread per core
    if "PYTHONUNBUFFERED" not in environ and options.mode == "gloo":
        # Rank output reaches the prefixed console as it is printed and survives a crash. Not with
        # mpirun: its --tag-output tags every write(), so unbuffered prints would be cut mid-line.
        common["PYTHONUNBUFFERED"] = "1"
    common.update(extra)
    forwarded = environment.forwarded(environ)
    if options.mode == "mpi":
        _plan_mpi(plan, options, used, placement, common, forwarded, nics)
    else:
        _plan_gloo(plan, options, used, placement, local, common, forwarded, environ)
    return plan


def _hosts(options: Options) -> List[HostSlots]:
    if options.hosts is not None:
        return parse_hosts(options.hosts)
    if options.hostfile is not None:
        return parse_hostfile(options.hostfile)
    return [HostSlots("localhost", options.np)]


def _place(hosts: List[HostSlots], np: int) -> Dict[str, List[int]]:
    """Ranks fill the hosts in order, as mpirun --map-by slot does: host1 gets 0..N-1, host2 N..2N-1, ..."""
    placement: Dict[str, List[int]] = {}
    rank = 0
    for h in hosts:
        count = min(h.slots, np - rank)
        placement[h.host] = list(range(rank, rank + count))
        rank += count
    return placement


def _rank_env(rank: int, local_rank: int, local_size: int, node_rank: int) -> Dict[str, str]:
    return {"RANK": str(rank), "LOCAL_RANK": str(local_rank), "LOCAL_WORLD_SIZE": str(local_size),
            "GROUP_RANK": str(node_rank), "NODE_RANK": str(node_rank)}


def horovod_env(rank: int, size: int, local_rank: int, local_size: int, host: str,
                 local_sizes: List[int]) -> Dict[str, str]:
    """What `horovodrun --gloo` gives each rank, so Horovod scripts and tests that read HOROVOD_* see their
    numbers (launch detection still names perseusrun: the torchrun variables come first). The cross rank is
    the rank among the processes with this local rank (one per host that has that many), in host order."""
    holders = [i for i, n in enumerate(local_sizes) if n > local_rank]
    node = next(i for i, n in enumerate(local_sizes) if sum(local_sizes[:i + 1]) > rank)
    return {"HOROVOD_RANK": str(rank), "HOROVOD_SIZE": str(size), "HOROVOD_LOCAL_RANK": str(local_rank),
            "HOROVOD_LOCAL_SIZE": str(local_size), "HOROVOD_CROSS_RANK": str(holders.index(node)),
            "HOROVOD_CROSS_SIZE": str(len(holders)), "HOROVOD_HOSTNAME": host}


def _plan_gloo(plan: JobPlan, options: Options, used: List[HostSlots], placement: Dict[str, List[int]],
               local: Dict[str, bool], common: Dict[str, str], forwarded: Dict[str, str], environ: Mapping[str, str]) -> None:
    command = list(options.command)
    if any(local.values()) and shutil.which(command[0], path=environ.get("PATH")) is None:
        raise CommandNotFound("perseusrun: {}: command not found on PATH".format(command[0]))
    local_sizes = [len(placement[h.host]) for h in used]
    for node_rank, h in enumerate(used):
        ranks = placement[h.host]
        for local_rank, rank in enumerate(ranks):
            env = dict(common)
            env.update(_rank_env(rank, local_rank, len(ranks), node_rank))
            env.update(horovod_env(rank, options.np, local_rank, len(ranks), h.host, local_sizes))
            if local[h.host]:
                plan.ranks.append(RankPlan(rank, h.host, local_rank, len(ranks), node_rank, "local", env, command))
            else:
                env = dict(forwarded, **env)
                remote = remote_command(plan.workdir, env, command, plan.terminate_grace())
                argv = ssh_argv(h.host, remote, options.ssh_port, options.ssh_identity_file, options.ssh_config)
                plan.ranks.append(RankPlan(rank, h.host, local_rank, len(ranks), node_rank, "ssh", env, argv))


def _plan_mpi(plan: JobPlan, options: Options, used: List[HostSlots], placement: Dict[str, List[int]],
              common: Dict[str, str], forwarded: Dict[str, str], nics: Dict[str, str]) -> None:
    btl = nics.get("GLOO_SOCKET_IFNAME") or nics.get("NCCL_SOCKET_IFNAME")
    firsts = [placement[h.host][0] for h in used]
    plan.mpirun = mpirun_argv(used, firsts, options.np, common, sorted(forwarded), btl, options.ssh_port,
                              options.log_dir, options.mpi_args, options.command)
    for node_rank, h in enumerate(used):
        ranks = placement[h.host]
        for local_rank, rank in enumerate(ranks):
            env = dict(forwarded, **common)
            env.update(_rank_env(rank, local_rank, len(ranks), node_rank))  # derived by the shim from OMPI_*
            # Set by Open MPI, not by perseusrun: shown so that the plan says what each rank will read.
            env.update({"OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(options.np),
                        "OMPI_COMM_WORLD_LOCAL_RANK": str(local_rank), "OMPI_COMM_WORLD_LOCAL_SIZE": str(len(ranks))})
            plan.ranks.append(RankPlan(rank, h.host, local_rank, len(ranks), node_rank, "mpirun", env, list(options.command)))


def format_text(plan: JobPlan) -> str:
    lines = ["perseusrun plan: {} ranks on {} host(s), mode {}".format(plan.np, len({r.host for r in plan.ranks}), plan.mode),
             "  master {}:{} (torch.distributed), perseus rendezvous {}, GLOO_TIMEOUT_SECONDS={:g}".format(
                 plan.master_addr, plan.master_port,
                 "on torch's (MASTER_PORT)" if plan.perseus_master_port is None else "port {}".format(plan.perseus_master_port),
                 plan.gloo_timeout_seconds),
             "  working directory {}".format(plan.workdir)]
    if plan.log_dir:
        lines.append("  logs under {}".format(plan.log_dir))
    for note in plan.notes:
        lines.append("  note: " + note)
    if plan.mpirun:
        lines.append("  mpirun command: " + " ".join(_shell_word(a) for a in plan.mpirun))
    for r in plan.ranks:
        lines.append("rank {} on {} (local rank {} of {}, node {}), started by {}".format(
            r.rank, r.host, r.local_rank, r.local_size, r.node_rank, {"local": "perseusrun", "ssh": "ssh", "mpirun": "mpirun"}[r.launch]))
        for k, v in sorted(r.env.items()):
            lines.append("    {}={}".format(k, v))
        lines.append("    command: " + " ".join(_shell_word(a) for a in r.command))
    return "\n".join(lines)


def _shell_word(word: str) -> str:
    return shlex.quote(word)
