"""horovodrun's common options on perseusrun's command line: each is taken (as the perseusrun option it spells, or
as the setting it makes, read through perseus/horovod_variables.py like the HOROVOD_* variable horovodrun would
set) or refused by name with what to do instead. Elastic options are perseusrun's own (args.py)."""

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .. import config, horovod_variables
from .errors import UsageError


def _same(value: str) -> str:
    return value


def _megabytes(value: str) -> str:
    try:
        return str(int(float(value) * 1024 * 1024))
    except ValueError:
        raise UsageError("--fusion-threshold-mb {!r}: not a number of megabytes".format(value)) from None


@dataclass(frozen=True)
class HorovodFlag:
    names: Tuple[str, ...]
    takes_value: bool
    variable: str = ""  # the HOROVOD_* variable horovodrun sets from it (read through horovod_variables)
    convert: Callable[[str], str] = _same  # the option's value -> the variable's ("1" for a switch)
    spells: str = ""  # or: the perseusrun option it is another name of
    accepted: str = ""  # or: taken, and why nothing needs doing
    refused: str = ""  # or: why perseusrun refuses it, and what to do instead


def _var(names: Tuple[str, ...], variable: str, takes_value: bool = True, convert: Callable[[str], str] = _same) -> HorovodFlag:
    return HorovodFlag(names, takes_value, variable=variable, convert=convert)


def _no(names: Tuple[str, ...], takes_value: bool, why: str) -> HorovodFlag:
    return HorovodFlag(names, takes_value, refused=why)


_AUTOTUNE = "perseus has no autotuner (the engine tunes its stream count itself); drop it"
FLAGS: Tuple[HorovodFlag, ...] = (
    HorovodFlag(("-i",), True, spells="--ssh-identity-file"),
    HorovodFlag(("--output-filename",), True, spells="--log-dir"),  # the same DIR/rank.R/{stdout,stderr} layout
    HorovodFlag(("-v",), False, spells="--version"),
    HorovodFlag(("--verbose",), False, accepted="perseusrun prints its plan (hosts, ranks, variables) on stderr"),
    HorovodFlag(("--disable-cache",), False, accepted="perseusrun keeps no cache of host checks"),
    _var(("--cycle-time-ms",), "HOROVOD_CYCLE_TIME"),
    _var(("--fusion-threshold-mb",), "HOROVOD_FUSION_THRESHOLD", convert=_megabytes),
    _var(("--cache-capacity",), "HOROVOD_CACHE_CAPACITY"),
    _var(("--hierarchical-allreduce",), "HOROVOD_HIERARCHICAL_ALLREDUCE", False, lambda _: "1"),
    _var(("--no-hierarchical-allreduce",), "HOROVOD_HIERARCHICAL_ALLREDUCE", False, lambda _: "0"),
    _var(("--autotune",), "HOROVOD_AUTOTUNE", False, lambda _: "1"),
    _var(("--autotune-log-file",), "HOROVOD_AUTOTUNE_LOG"),
    _var(("--timeline-filename",), "HOROVOD_TIMELINE"),
    _var(("--timeline-mark-cycles",), "HOROVOD_TIMELINE_MARK_CYCLES", False, lambda _: "1"),
    _var(("--no-stall-check",), "HOROVOD_STALL_CHECK_DISABLE", False, lambda _: "1"),
    _var(("--stall-check-warning-time-seconds",), "HOROVOD_STALL_CHECK_TIME_SECONDS"),
    _var(("--stall-check-shutdown-time-seconds",), "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"),
    _var(("--mpi-threads-disable",), "HOROVOD_MPI_THREADS_DISABLE", False, lambda _: "1"),
    _var(("--num-nccl-streams",), "HOROVOD_NUM_NCCL_STREAMS"),
    _var(("--thread-affinity",), "HOROVOD_THREAD_AFFINITY"),
    _var(("--gloo-timeout-seconds",), "HOROVOD_GLOO_TIMEOUT_SECONDS"),
    _var(("--network-interface", "--network-interfaces"), "HOROVOD_GLOO_IFACE"),
    _var(("--log-level",), "HOROVOD_LOG_LEVEL"),
    _var(("--log-without-timestamp", "--log-hide-timestamp"), "HOROVOD_LOG_HIDE_TIME", False, lambda _: "1"),
    _no(("--hierarchical-allgather", "--no-hierarchical-allgather"), False,
        "perseus's allgather runs on one level; drop it"),
    _no(("--autotune-warmup-samples", "--autotune-steps-per-sample", "--autotune-bayes-opt-max-samples",
         "--autotune-gaussian-process-noise"), True, _AUTOTUNE),
    _no(("--start-timeout",), True, "perseusrun starts ranks without a separate start timeout; rendezvous and "
        "collectives wait GLOO_TIMEOUT_SECONDS (set it, or --gloo-timeout-seconds)"),
    _no(("--check-build", "-cb"), False, "run `perseus doctor`: it shows the installed wheels, their frameworks, "
        "CUDA and what the engine was built with"),
    _no(("--config-file",), True, "set the options on the command line or as HOROVOD_*/PERSEUS_* variables"),
    _no(("--tcp",), False, "perseus carries tensors over its own engine (Gloo TCP, shared memory, NCCL), never MPI; "
        "drop it"),
    _no(("--binding-args",), True, "pass binding options to Open MPI with --mpi --mpi-args"),
    _no(("--jsrun",), False, "not supported: IBM's jsrun; use --gloo (default) or --mpi"),
    _no(("--prefix-output-with-timestamp",), False, "not supported: each line is prefixed with its rank only"),
)
BY_NAME: Dict[str, HorovodFlag] = {name: flag for flag in FLAGS for name in flag.names}
VALUE_FLAGS = frozenset(name for flag in FLAGS if flag.takes_value for name in flag.names)
SWITCHES = frozenset(name for flag in FLAGS if not flag.takes_value for name in flag.names)


@dataclass
class Rewritten:
    words: List[str]  # perseusrun's own options, horovodrun spellings replaced
    exports: List[Tuple[str, Optional[str]]]  # PERSEUS_* settings for every rank
    verbose: bool
    notes: List[str]


def rewrite(words: Sequence[str]) -> Rewritten:
    """perseusrun's option words with horovodrun's taken out: renamed, turned into settings, or refused."""
    out = Rewritten([], [], False, [])
    i = 0
    while i < len(words):
        token = words[i]
        name, eq, inline = token.partition("=")
        flag = BY_NAME.get(name)
        if flag is None:
            out.words.append(token)
            i += 1
            continue
        value = ""
        if flag.takes_value:
            if eq:
                value = inline
            elif i + 1 < len(words):
                value = words[i + 1]
                i += 1
            else:
                raise UsageError("{} (horovodrun's) needs a value".format(name))
        i += 1
        if flag.refused:
            raise UsageError("{} is horovodrun's and perseusrun does not take it: {}".format(name, flag.refused))
        if flag.spells:
            out.words += [flag.spells] + ([value] if flag.takes_value else [])
            out.notes.append("read horovodrun's {} as {}".format(name, flag.spells))
        elif flag.accepted:
            out.verbose = out.verbose or name == "--verbose"
            out.notes.append("{} (horovodrun's): {}".format(name, flag.accepted))
        else:
            _setting(out, name, flag, value)
    return out


def _setting(out: Rewritten, name: str, flag: HorovodFlag, value: str) -> None:
    raw = flag.convert(value)
    try:
        (reading,) = horovod_variables.read({flag.variable: raw})
    except config.ConfigError as exc:
        raise UsageError("{}: {}".format(name, exc)) from None
    if reading.warning:
        why = horovod_variables.BY_NAME[flag.variable].why_not or reading.warning
        raise UsageError("{} is horovodrun's and perseusrun does not take it: {}".format(name, why))
    if reading.perseus:
        out.exports.append((reading.perseus, reading.perseus_value))
        out.notes.append("read horovodrun's {} as {}={} for every rank".format(name, reading.perseus, reading.perseus_value))
    else:
        out.notes.append("{} (horovodrun's) asks for what perseus does by default".format(name))
