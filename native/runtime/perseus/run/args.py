"""perseusrun's command line: options before the command, the command after `--` or after the first
non-option word (the seed writes it both ways); typographic dashes (`–np`, `–-mpi`) are read as hyphens."""

import argparse
import shlex
from typing import List, Sequence, Tuple

from . import horovod_flags
from .errors import UsageError
from .options import Options

DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"  # hyphen, non-breaking hyphen, figure/en/em dash, bar, minus
VALUE_OPTIONS = {"-np", "--num-proc", "-H", "--hosts", "--hostfile", "-hostfile", "--log-dir", "-p", "--ssh-port",
                 "--ssh-identity-file", "--ssh-config", "-x", "--mpi-args", "--min-np", "--min-num-proc", "--max-np",
                 "--max-num-proc", "--host-discovery-script", "--slots-per-host", "--elastic-timeout", "--reset-limit"}
TWO_VALUE_OPTIONS = {"--blacklist-cooldown-range"}
FLAG_OPTIONS = {"--gloo", "--mpi", "--dry-run", "--json", "-h", "--help", "--version"}
VALUE_OPTIONS |= horovod_flags.VALUE_FLAGS  # horovodrun's spellings (horovod_flags.py)
FLAG_OPTIONS |= horovod_flags.SWITCHES

DESCRIPTION = """\
Start NP copies of COMMAND as one data-parallel job (AIACC-Training / Perseus).

  perseusrun -np NP [-H localhost:N] -- COMMAND [ARG...]            one machine (Gloo, the default)
  perseusrun --gloo -np NP -H host1:N,host2:N -- COMMAND [ARG...]   several machines, started over ssh
  perseusrun --mpi  -np NP -H host1:N,host2:N -- COMMAND [ARG...]   several machines, started by Open MPI

  perseusrun -np 8 --min-np 4 --max-np 12 --host-discovery-script ./discover_hosts.sh -- COMMAND
                                                                     elastic (see "elastic mode" below)

NP is the total number of processes, N the processes (usually GPUs) of each host: NP = N x hosts.
The `--` before COMMAND may be left out."""

EPILOG = """\
what every rank gets:
  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK and NODE_RANK (index of its host),
  GROUP_WORLD_SIZE (hosts), MASTER_ADDR and MASTER_PORT (torch.distributed, env://),
  PERSEUS_MASTER_PORT (only when set here) and PERSEUS_LAUNCHER=perseusrun; in Gloo mode also what
  horovodrun --gloo sets: HOROVOD_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_RANK, HOROVOD_LOCAL_SIZE,
  HOROVOD_CROSS_RANK, HOROVOD_CROSS_SIZE, HOROVOD_HOSTNAME.
  OMP_NUM_THREADS=1 when several ranks share a host and PYTHONUNBUFFERED=1, unless already set.
  Ranks read their numbers with perseus.launch.detect() (perseus.torch.horovod's init() does).

placement:
  ranks fill the hosts in order (host1 gets ranks 0..N-1, host2 the next N, ...); the first host is
  the master. -np may be lower than the slots (the last hosts then get fewer ranks), never higher.
  A hostfile has one `HOST slots=N` (or HOST:N) per line; `#` starts a comment.

ports:
  MASTER_PORT: taken from the environment, else a free port picked on the master and held by
  perseusrun until rank 0 listens there (29500 when the master is another machine). PERSEUS_MASTER_PORT:
  passed on when set (perseus then keeps its own rendezvous there); unset, perseus joins torch's
  rendezvous on MASTER_PORT and opens no port of its own. Equal or busy explicit values are refused.

network interfaces (seed variables, forwarded only when set):
  PERSEUS_NCCL_NETWORK_INTERFACE -> NCCL_SOCKET_IFNAME, PERSEUS_GLOO_NETWORK_INTERFACE -> GLOO_SOCKET_IFNAME
  (and Open MPI's btl_tcp_if_include with --mpi). They are checked to exist on this host.

--gloo (default):
  perseusrun starts local ranks itself and remote ranks with
    ssh [-p PORT] HOST 'cd DIR && env VAR=... COMMAND'
  like horovodrun (BatchMode, StrictHostKeyChecking=no unless --ssh-config). Remote ranks get the
  rank variables plus PATH, LD_LIBRARY_PATH, PYTHONPATH, VIRTUAL_ENV, CONDA_PREFIX, every PERSEUS_*,
  NCCL_* and GLOO_* variable and every -x variable; local ranks inherit the whole environment.
  A remote rank ends when its ssh connection does.

--mpi:
  perseusrun runs Open MPI's mpirun (-H, --map-by slot, --bind-to none, --tag-output, -x for the same
  variables, --allow-run-as-root only as root, plm_rsh_args "-p PORT" with --ssh-port). MPI starts
  and numbers the processes (OMPI_COMM_WORLD_*); the tensors still travel over perseus's engine
  (Gloo, shared memory, NCCL for torch CUDA tensors), rendezvousing at MASTER_ADDR. Install:
  apt-get install openmpi-bin.

failures and signals:
  when one rank exits non-zero, the others get SIGTERM, then SIGKILL after min(5 s,
  GLOO_TIMEOUT_SECONDS/4), and perseusrun exits with the failed rank's code (128+N for signal N).
  Ctrl-C (SIGINT), SIGTERM and SIGHUP end every rank the same way (exit 130 / 143 / 129).

output:
  each line of rank R is printed as `[R]<stdout>:line` or `[R]<stderr>:line` (mpirun: `[1,R]<stdout>:`).
  --log-dir D also writes D/rank.R/stdout and D/rank.R/stderr (mpirun: D/1/rank.R/stdout).

exit codes:
  0 every rank succeeded; 2 usage error (bad option, host, port, PERSEUS_* value: nothing started);
  127 COMMAND not found; otherwise the failed rank's code.

horovodrun's options:
  taken as the perseusrun option they spell (-i, --output-filename, -v), or as the setting they make
  (--cycle-time-ms, --fusion-threshold-mb 0, --num-nccl-streams, --gloo-timeout-seconds,
  --network-interface, --hierarchical-allreduce: read like their HOROVOD_* variables, docs/horovod.md),
  --verbose prints the plan on stderr; the others (--timeline-filename, --autotune, --start-timeout,
  --check-build, ...) are refused by name with what to do instead.

elastic mode (--min-np or --host-discovery-script; Horovod's horovodrun options, Gloo only):
  perseusrun starts a worker on every slot the discovery script reports (one `HOST:SLOTS` or `HOST` line
  per host; run every second; -H/--hostfile instead gives a fixed list), at most --max-np, and starts
  training once -np slots are there. When a worker dies its host is blacklisted (for good, or for a
  cooldown within --blacklist-cooldown-range MIN MAX seconds) and the survivors re-form the job with new
  ranks from their last commit; when hosts appear the job grows at the workers' next commit. Workers
  use hvd.elastic.run and hvd.elastic.TorchState (docs/elastic.md). The job ends, exit code 1, naming the
  cause, when: the discovery script fails or prints something else than HOST[:SLOTS] lines on its first
  call, or keeps failing for longer than --elastic-timeout; fewer than --min-np slots stay available for
  longer than --elastic-timeout; a generation does not form within it; the job would re-form more than
  --reset-limit times. Output lines are prefixed [HOST:SLOT]<stdout>: (a worker's rank changes).

dashes:
  the manual prints `–np` and `–-mpi` with typographic dashes; perseusrun reads them as `-np` and
  `--mpi` and says so on stderr.

examples:
  perseusrun -np 8 -- python train.py --model resnet50
  perseusrun --mpi -np 16 -H 10.0.0.1:8,10.0.0.2:8 -- python train.py --model resnet50
  PERSEUS_GLOO_NETWORK_INTERFACE=eth1 perseusrun -np 16 -H 10.0.0.1:8,10.0.0.2:8 -p 36666 python train.py
  perseusrun -np 4 --dry-run --json -- python train.py"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        raise UsageError(message)


def _version() -> str:
    try:
        from perseus import __version__

        return __version__
    except ImportError:  # `perseus` shadowed by a namespace portion (a source checkout on PYTHONPATH)
        try:
            from importlib import metadata

            return metadata.version("perseus-common")
        except Exception:
            return "unknown"


def parser() -> argparse.ArgumentParser:
    __version__ = _version()
    p = _Parser(prog="perseusrun", description=DESCRIPTION, epilog=EPILOG, allow_abbrev=False,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                usage="perseusrun -np NP [-H HOST:N,... | --hostfile FILE] [--gloo | --mpi] [options] [--] COMMAND [ARG...]")
    p.add_argument("-np", "--num-proc", dest="np", type=int, metavar="NP", required=True, help="total number of processes")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-H", "--hosts", metavar="HOST:N,...", help="hosts and their slots (default localhost:NP)")
    where.add_argument("--hostfile", "-hostfile", metavar="FILE", help="file of `HOST slots=N` lines")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--gloo", dest="mode", action="store_const", const="gloo", help="perseusrun starts the ranks (default)")
    mode.add_argument("--mpi", dest="mode", action="store_const", const="mpi", help="Open MPI's mpirun starts the ranks")
    p.add_argument("--log-dir", metavar="DIR", help="also write each rank's output to DIR/rank.R/{stdout,stderr}")
    p.add_argument("-p", "--ssh-port", type=int, metavar="PORT", help="ssh port of the remote hosts (ModelArts: 36666)")
    p.add_argument("--ssh-identity-file", metavar="FILE", help="private key for ssh (-i)")
    p.add_argument("--ssh-config", metavar="FILE", help="ssh configuration file (-F), e.g. with UserKnownHostsFile")
    p.add_argument("-x", dest="exports", action="append", default=[], metavar="VAR[=VALUE]",
                   help="also give VAR to every rank (repeatable)")
    p.add_argument("--mpi-args", default="", metavar="'ARGS'", help="extra mpirun arguments (with --mpi)")
    p.add_argument("--dry-run", action="store_true", help="print the plan (per rank: host, variables, command), start nothing")
    p.add_argument("--json", action="store_true", help="with --dry-run: print the plan as JSON")
    elastic = p.add_argument_group("elastic mode (Horovod's options; Gloo only)")
    elastic.add_argument("--min-np", "--min-num-proc", dest="min_np", type=int, metavar="N",
                         help="fewest processes to go on with; below it the job waits (default: -np); turns elastic mode on")
    elastic.add_argument("--max-np", "--max-num-proc", dest="max_np", type=int, metavar="N",
                         help="most processes the job grows to (default: every discovered slot)")
    elastic.add_argument("--host-discovery-script", metavar="SCRIPT",
                         help="prints the available hosts, one HOST:SLOTS (or HOST) per line; turns elastic mode on")
    elastic.add_argument("--slots-per-host", type=int, metavar="N",
                         help="slots of a host the discovery script prints without :SLOTS")
    elastic.add_argument("--elastic-timeout", type=int, metavar="SECONDS",
                         help="how long to wait for --min-np slots, a generation to form or discovery to recover (default: "
                              "HOROVOD_ELASTIC_TIMEOUT, else 600)")
    elastic.add_argument("--reset-limit", type=int, metavar="N", help="end the job when it would re-form more than N times")
    elastic.add_argument("--blacklist-cooldown-range", dest="cooldown_range", type=int, nargs=2, metavar=("MIN", "MAX"),
                         help="a failed host comes back after MIN..MAX seconds (1 <= MIN <= MAX <= 3600; default: never)")
    p.add_argument("--version", action="version", version="perseusrun (perseus-common) " + __version__)
    return p


def _normalise(token: str, notes: List[str]) -> str:
    if not token or token[0] not in DASHES:
        return token
    bare = token.lstrip("-" + DASHES)
    name, sep, value = bare.partition("=")
    for candidate in ("-" + name, "--" + name):
        if candidate in VALUE_OPTIONS or candidate in FLAG_OPTIONS or candidate in TWO_VALUE_OPTIONS:
            fixed = candidate + sep + value
            notes.append("read {!r} as {!r} (a typographic dash was typed for a hyphen)".format(token, fixed))
            return fixed
    fixed = "".join("-" if c in DASHES else c for c in token)
    notes.append("read {!r} as {!r} (a typographic dash was typed for a hyphen)".format(token, fixed))
    return fixed


def split(argv: Sequence[str]) -> Tuple[List[str], List[str], List[str]]:
    """(options, command, notes): the command starts after `--` or at the first word that is no option or option value."""
    notes: List[str] = []
    options: List[str] = []
    i = 0
    while i < len(argv):
        token = _normalise(argv[i], notes)
        if token == "--":
            return options, list(argv[i + 1:]), notes
        if token.startswith("-") and token != "-":
            options.append(token)
            if token in VALUE_OPTIONS and i + 1 < len(argv):
                options.append(argv[i + 1])
                i += 1
            elif token in TWO_VALUE_OPTIONS:
                options.extend(argv[i + 1:i + 3])
                i += len(argv[i + 1:i + 3])
            i += 1
            continue
        return options, [token] + list(argv[i + 1:]), notes
    return options, [], notes


def parse(argv: Sequence[str]) -> Options:
    option_words, command, notes = split(argv)
    horovodrun = horovod_flags.rewrite(option_words)
    notes += horovodrun.notes
    ns = parser().parse_args(horovodrun.words)
    if ns.np < 1:
        raise UsageError("-np {}: the number of processes must be at least 1".format(ns.np))
    if not command:
        raise UsageError("no command to run; write it after the options, e.g. perseusrun -np {} -- python train.py".format(ns.np))
    if ns.json and not ns.dry_run:
        raise UsageError("--json prints the plan and goes with --dry-run")
    if ns.ssh_port is not None and not 1 <= ns.ssh_port <= 65535:
        raise UsageError("--ssh-port {}: not a port number (1-65535)".format(ns.ssh_port))
    if ns.mpi_args and ns.mode != "mpi":
        raise UsageError("--mpi-args is for --mpi runs; add --mpi or drop --mpi-args")
    for name, path in (("--ssh-identity-file", ns.ssh_identity_file), ("--ssh-config", ns.ssh_config)):
        if path is not None:
            try:
                open(path, "rb").close()
            except OSError as exc:
                raise UsageError("{} {}: {}".format(name, path, exc.strerror or exc)) from None
    try:
        mpi_args = shlex.split(ns.mpi_args)
    except ValueError as exc:
        raise UsageError("--mpi-args {!r}: {}".format(ns.mpi_args, exc)) from None
    exports = []
    for item in ns.exports:
        name, sep, value = item.partition("=")
        exports.append((name, value if sep else None))
    exports += horovodrun.exports
    options = Options(np=ns.np, command=command, hosts=ns.hosts, hostfile=ns.hostfile, mode=ns.mode or "gloo",
                      log_dir=ns.log_dir, ssh_port=ns.ssh_port, ssh_identity_file=ns.ssh_identity_file,
                      ssh_config=ns.ssh_config, exports=exports, mpi_args=mpi_args, dry_run=ns.dry_run,
                      json=ns.json, notes=notes, verbose=horovodrun.verbose)
    from .elastic.settings import apply

    return apply(options, ns)
