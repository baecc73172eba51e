"""The HOROVOD_* variables Horovod users set, each declared once with what perseus does with it.

A Horovod job's environment keeps working unchanged: a setting with a perseus counterpart is read as that
PERSEUS_* variable (`translate` writes it into the environment at `import perseus`, so the native engine
reads it too); a setting perseus does not honour gets a warning that names it and says why; the variables
a launcher sets for its ranks, and those whose behaviour perseus already has, pass quietly. A PERSEUS_*
variable set explicitly wins over its Horovod counterpart (with a warning when they disagree).
"""

import enum
import os
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, MutableMapping, Optional, Tuple


class Treatment(enum.Enum):
    TRANSLATED = "read as a PERSEUS_* variable"
    ALREADY = "perseus behaves so without it"
    NOT_HONOURED = "warned about: no effect"
    LAUNCHER = "set by a launcher for its ranks"
    BUILD = "Horovod's build setting (pip install horovod)"


class HorovodVariableWarning(UserWarning):
    """A HOROVOD_* variable is set that perseus does not honour (the message says why and what to use)."""


# raw value -> the PERSEUS_* value, or None when this value has no counterpart (then `why_not` applies)
Converter = Callable[[str], Optional[str]]


def _same(raw: str) -> Optional[str]:
    return raw.strip()


def _only_zero(raw: str) -> Optional[str]:
    return "0" if raw.strip() == "0" else None


def _only_one(raw: str) -> Optional[str]:
    return "1" if raw.strip() == "1" else None


@dataclass(frozen=True)
class HorovodVariable:
    name: str
    treatment: Treatment
    meaning: str  # what it does in Horovod, one line
    perseus: str = ""  # TRANSLATED: the variable it is read as
    convert: Converter = _same
    why_not: str = ""  # NOT_HONOURED (or a TRANSLATED value without counterpart): why, and what to use
    horovod_default: str = ""  # TRANSLATED: Horovod's default spelled out, which perseus's own choice matches


def _t(name: str, perseus: str, meaning: str, convert: Converter = _same, why_not: str = "",
       horovod_default: str = "") -> HorovodVariable:
    return HorovodVariable(name, Treatment.TRANSLATED, meaning, perseus, convert, why_not, horovod_default)


def _no(name: str, meaning: str, why_not: str) -> HorovodVariable:
    return HorovodVariable(name, Treatment.NOT_HONOURED, meaning, why_not=why_not)


_STALL = "perseus has no stall inspector: a collective some rank never joins fails on every rank after GLOO_TIMEOUT_SECONDS"
_GPU_BUILD = "a Horovod build setting; perseus wheels are built per CUDA x framework cell (install the matching wheel)"

HOROVOD_VARIABLES: Tuple[HorovodVariable, ...] = (
    _t("HOROVOD_CYCLE_TIME", "PERSEUS_CYCLE_TIME_MS", "milliseconds between negotiation cycles"),
    _t("HOROVOD_GLOO_TIMEOUT_SECONDS", "GLOO_TIMEOUT_SECONDS", "timeout of Gloo's operations and rendezvous"),
    _t("HOROVOD_GLOO_IFACE", "PERSEUS_GLOO_NETWORK_INTERFACE", "network interface of Gloo"),
    _t("HOROVOD_NUM_NCCL_STREAMS", "PERSEUS_ALLREDUCE_STREAMS", "concurrent NCCL streams per device (perseus: "
       "communicators that carry fused buffers concurrently, Gloo or NCCL)"),
    _t("HOROVOD_HIERARCHICAL_ALLREDUCE", "PERSEUS_ALLREDUCE_MODE", "1: allreduce inside each node, then across nodes",
       _only_one, "only 1 has a counterpart; unset, perseus chooses by PERSEUS_ALLREDUCE_DTYPE (one level unless "
       "it is 2)", horovod_default="0"),
    _t("HOROVOD_FUSION_THRESHOLD", "PERSEUS_ALLREDUCE_FUSION", "bytes of the fusion buffer (0: no fusion)", _only_zero,
       "perseus fuses by granularity (PERSEUS_ALLREDUCE_FUSION: buckets per cycle, 1-128), not by a byte threshold; "
       "only 0 (no fusion) has a counterpart", horovod_default="67108864"),
    HorovodVariable("HOROVOD_DYNAMIC_PROCESS_SETS", Treatment.ALREADY,
                    "allow add_process_set/remove_process_set after init"),
    HorovodVariable("HOROVOD_CPU_OPERATIONS", Treatment.ALREADY, "gloo, mpi or ccl for CPU tensors (perseus: its "
                    "engine over Gloo and shared memory; mpi and ccl are not offered)"),
    HorovodVariable("HOROVOD_CONTROLLER", Treatment.ALREADY, "gloo or mpi negotiation (perseus: its own engine's, over "
                    "its TCP store; under mpirun MPI only bootstraps it)"),
    _no("HOROVOD_TIMELINE", "a Chrome trace of every collective", "not supported: perseus writes no timeline; "
        "PERSEUS_ENGINE_PROFILE=1 prints the engine's per-stage times"),
    _no("HOROVOD_TIMELINE_MARK_CYCLES", "mark negotiation cycles in the timeline", "not supported: no timeline"),
    _no("HOROVOD_AUTOTUNE", "tune fusion threshold and cycle time by Bayesian optimisation", "perseus tunes the number "
        "of concurrent streams itself (PERSEUS_ALLREDUCE_STREAMS unset); set PERSEUS_ALLREDUCE_FUSION and "
        "PERSEUS_CYCLE_TIME_MS to choose the rest"),
    _no("HOROVOD_AUTOTUNE_LOG", "the autotuner's log file", "no autotuner (see HOROVOD_AUTOTUNE)"),
    _no("HOROVOD_CACHE_CAPACITY", "entries of the response cache that skips negotiation",
        "perseus has no response cache; PERSEUS_OFFLINE_NEG=1 skips negotiation once steps repeat"),
    _no("HOROVOD_LOG_LEVEL", "trace/debug/info/warning/error/fatal", "perseus's engine logs only errors and what "
        "PERSEUS_ENGINE_PROFILE=1 asks for"),
    _no("HOROVOD_LOG_HIDE_TIME", "log lines without time stamps", "no log levels (see HOROVOD_LOG_LEVEL)"),
    _no("HOROVOD_STALL_CHECK_DISABLE", "turn the stall inspector off", _STALL),
    _no("HOROVOD_STALL_CHECK_TIME_SECONDS", "seconds before a stall warning", _STALL),
    _no("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "seconds before a stall shuts the job down", _STALL),
    _no("HOROVOD_MPI_THREADS_DISABLE", "MPI without thread support", "perseus does not run collectives over MPI"),
    _no("HOROVOD_ADASUM_MPI_CHUNK_SIZE", "Adasum's MPI chunk size", "not supported: Adasum"),
    _no("HOROVOD_BATCH_D2D_MEMCOPIES", "batch device copies into the fusion buffer", "perseus's CUDA path compresses "
        "each bucket with one kernel; there is no setting"),
    _no("HOROVOD_DISABLE_GROUP_FUSION", "keep grouped collectives out of fusion", "perseus fuses grouped collectives "
        "like any other; there is no setting"),
    _no("HOROVOD_ENABLE_ASYNC_COMPLETION", "complete GPU ops without host synchronisation", "perseus's torch CUDA path "
        "always completes on the tensor's stream without a device-wide synchronisation"),
    _no("HOROVOD_THREAD_AFFINITY", "CPU cores of the background threads", "not supported: pin the process instead "
        "(taskset, numactl)"),
    _no("HOROVOD_ENABLE_XLA_OPS", "TensorFlow XLA kernels of the collectives", "not supported: XLA ops"),
    _no("HOROVOD_GPU_ALLREDUCE", "allreduce library of a Horovod build", _GPU_BUILD),
    _no("HOROVOD_GPU_BROADCAST", "broadcast library of a Horovod build", _GPU_BUILD),
    _no("HOROVOD_GPU_OPERATIONS", "GPU library of a Horovod build", _GPU_BUILD),
)
for _name in ("HOROVOD_WITH_PYTORCH", "HOROVOD_WITH_TENSORFLOW", "HOROVOD_WITH_MXNET", "HOROVOD_WITH_GLOO",
              "HOROVOD_WITH_MPI", "HOROVOD_WITHOUT_PYTORCH", "HOROVOD_WITHOUT_TENSORFLOW", "HOROVOD_WITHOUT_MXNET",
              "HOROVOD_WITHOUT_GLOO", "HOROVOD_WITHOUT_MPI", "HOROVOD_NCCL_HOME", "HOROVOD_CUDA_HOME",
              "HOROVOD_BUILD_ARCH_FLAGS", "HOROVOD_CMAKE"):
    HOROVOD_VARIABLES += (HorovodVariable(_name, Treatment.BUILD, "a build setting of `pip install horovod`"),)
for _name in ("HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE", "HOROVOD_CROSS_RANK",
              "HOROVOD_CROSS_SIZE", "HOROVOD_HOSTNAME", "HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT",
              "HOROVOD_ELASTIC", "HOROVOD_GLOO_GLOBAL_PREFIX", "HOROVOD_GLOO_LOCAL_PREFIX", "HOROVOD_GLOO_CROSS_PREFIX"):
    HOROVOD_VARIABLES += (HorovodVariable(_name, Treatment.LAUNCHER, "set by horovodrun (and perseusrun) for each rank"),)

BY_NAME: Dict[str, HorovodVariable] = {v.name: v for v in HOROVOD_VARIABLES}


@dataclass(frozen=True)
class Reading:
    """What `translate` did with one HOROVOD_* variable that was set."""

    name: str
    value: str
    perseus: str  # the PERSEUS_* variable written ("" when none)
    warning: str  # "" when the setting is honoured or harmless
    perseus_value: str = ""  # what `perseus` is set to


def read(environ: Mapping[str, str]) -> List[Reading]:
    """Every HOROVOD_* variable set in `environ`, what it becomes and what to warn; raises perseus.config's
    ConfigError (naming the HOROVOD_* variable) for a value its PERSEUS_* counterpart refuses."""
    readings = []
    for name in sorted(n for n in environ if n.startswith("HOROVOD_")):
        raw = environ[name]
        if not raw.strip():
            continue
        spec = BY_NAME.get(name)
        if spec is None:
            readings.append(Reading(name, raw, "", "{} is set but perseus does not read it, so it changes nothing "
                                    "(the HOROVOD_* variables perseus knows: docs/horovod.md)".format(name)))
        elif spec.treatment is Treatment.TRANSLATED:
            readings.append(_translated(spec, raw, environ))
        elif spec.treatment is Treatment.NOT_HONOURED:
            readings.append(Reading(name, raw, "", "{} is set but not honoured: {}".format(name, spec.why_not)))
        elif spec.treatment is Treatment.BUILD:
            readings.append(Reading(name, raw, "", "{} is set but not honoured: {}".format(name, _GPU_BUILD)))
        else:
            readings.append(Reading(name, raw, "", ""))
    return readings


def _translated(spec: HorovodVariable, raw: str, environ: Mapping[str, str]) -> Reading:
    from perseus import config  # here: the build tool loads this file on its own to render docs/horovod.md

    value = spec.convert(raw)
    if value is None:
        if raw.strip() == spec.horovod_default:
            return Reading(spec.name, raw, "", "")  # Horovod's default spelled out: perseus's own choice applies
        return Reading(spec.name, raw, "", "{}={} is set but not honoured: {}".format(spec.name, raw.strip(), spec.why_not))
    try:
        config.parse_value(spec.perseus, value)
    except config.ConfigError as exc:
        allowed = str(exc).split("expected ", 1)[-1]
        raise config.ConfigError("{}={!r} (read as {}) is not allowed: expected {}".format(
            spec.name, raw, spec.perseus, allowed)) from None
    own = environ.get(spec.perseus, "").strip()
    if own:
        if own != value:
            return Reading(spec.name, raw, "", "{}={} is ignored: {}={} is set too and wins".format(
                spec.name, raw.strip(), spec.perseus, own))
        return Reading(spec.name, raw, "", "")
    return Reading(spec.name, raw, spec.perseus, "", value)


def translate(environ: Optional[MutableMapping[str, str]] = None) -> List[Reading]:
    """Write each honoured HOROVOD_* setting into `environ` (default os.environ) as its PERSEUS_* variable and
    return what was read; `import perseus` calls this before any PERSEUS_* variable is read."""
    environ = os.environ if environ is None else environ
    readings = read(environ)
    for reading in readings:
        if reading.perseus:
            environ[reading.perseus] = reading.perseus_value
    return readings


TRANSLATED: Dict[str, str] = {}  # PERSEUS_* name -> the HOROVOD_* name it was read from, in this process


def translate_process_environment() -> None:
    """`import perseus`: translate os.environ once, warn by name about what is not honoured. A value the
    counterpart refuses is not used and is warned about here (an import does not raise; perseusrun and
    `perseus doctor` refuse it as an error)."""
    from perseus import config

    try:
        readings = translate()
    except config.ConfigError as exc:
        warnings.warn("{}; it is not used (perseusrun refuses to start with it)".format(exc), HorovodVariableWarning,
                      stacklevel=3)
        return
    for reading in readings:
        if reading.perseus:
            TRANSLATED[reading.perseus] = reading.name
        if reading.warning:
            warnings.warn(reading.warning, HorovodVariableWarning, stacklevel=3)


def table() -> str:
    """The reference table of docs/horovod.md (generated)."""
    rows = ["| variable | in Horovod | in perseus |", "| --- | --- | --- |"]
    for v in HOROVOD_VARIABLES:
        if v.treatment is Treatment.TRANSLATED:
            what = "read as `{}`".format(v.perseus) + ("; {}".format(v.why_not) if v.why_not else "")
        elif v.treatment is Treatment.NOT_HONOURED:
            what = "warning: " + v.why_not
        else:
            what = v.treatment.value
        rows.append("| `{}` | {} | {} |".format(v.name, v.meaning, what))
    return "\n".join(rows) + "\n"
