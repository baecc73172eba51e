"""Every PERSEUS_* environment variable (and GLOO_TIMEOUT_SECONDS) as one typed, validated object.

`VARIABLES` is the table of specs (name, field, default, what is allowed, what it does); `load()` reads
an environment through it into a frozen `PerseusConfig`. A bad value raises `ConfigError` naming the
variable, the value and what is allowed. An empty value means "not set" (the seed documents say
"leave it empty" for the automatic choice).

A variable that this build cannot honour in the situation at hand is reported once by
`warn_not_honoured()` (the runtime calls it where the decision is made); nothing is read and
silently ignored.
"""

import enum
import os
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Set, Tuple

from ._frameworks import FRAMEWORKS  # relative: the build tool loads this folder without installing it
from ._parsers import Parser, choice, existing_file, float_range, int_range, interface, network_interfaces, path_prefix


class ConfigError(ValueError):
    """A PERSEUS_* variable holds a value that is not allowed (the message names variable, value, range)."""


class WireDtype(enum.IntEnum):
    """PERSEUS_ALLREDUCE_DTYPE: what crosses the network for fp32 gradients."""

    FP16 = 0  # fp16 everywhere, with the gradient scale
    NONE = 1  # no compression: the gradient's own dtype
    MIXED = 2  # the gradient's dtype inside a node, fp16 between nodes


class AllreduceMode(enum.IntEnum):
    """PERSEUS_ALLREDUCE_MODE: one-level allreduce or two levels (inside a node, then among node leaders)."""

    FLAT = 0
    HIERARCHICAL = 1


class NotHonouredWarning(UserWarning):
    """A PERSEUS_* variable was set but this build or this job cannot honour it (the message says why)."""


_BOOL = {"0": False, "1": True}
# The frameworks whose runtime runs on the native engine honour what the engine reads (their adapters say so).
ENGINE_RUNTIMES = tuple(row["name"] for row in FRAMEWORKS if row["honours_engine_variables"])
# libperseus-caffe (native/bindings/caffe) reads what the engine reads (perseus_engine_options_from_env),
# PERSEUS_MASTER_PORT and, through the core, PERSEUS_CPU_DISPATCH; no Python shim, so nothing else.
CAFFE_LIBRARY = ("caffe",)
ENGINE_READERS = ENGINE_RUNTIMES + CAFFE_LIBRARY
RUNTIMES = tuple(row["name"] for row in FRAMEWORKS) + CAFFE_LIBRARY  # what honoured_by may name, in docs' order
CPU_DISPATCH_PATHS = ("auto", "scalar", "avx2", "avx512", "avx512_bf16")  # native/core/src/cpu/dispatch.cpp


@dataclass(frozen=True)
class VariableSpec:
    """One variable, declared once: the runtime config, its validation, perseusrun's checks, doctor's
    table, the generated C header (native/core/include/perseus/variables.h) and the reference page
    (docs/variables.md) all read this."""

    name: str
    field: str
    default: Any
    parse: Parser  # str -> value; raises ValueError with the allowed values/range
    allowed: str  # human text of what is allowed
    effect: str  # one line: what the variable changes
    since: str  # the release that introduced it
    honoured_by: Tuple[str, ...]  # frameworks whose runtime honours it today
    aliases: Tuple[str, ...] = ()  # other spellings accepted (with a note), e.g. the manual's typo
    engine: str = ""  # the native engine option it sets (the generated PERSEUS_ENGINE_*_OPTIONS table); "" none


def variable(name: str, default: Any, parse: Parser, allowed: str, effect: str, since: str = "1.5.0",
             honoured_by: Tuple[str, ...] = ("torch",), aliases: Tuple[str, ...] = (), engine: str = "") -> Any:
    """A PerseusConfig field that is also the declaration of its environment variable; `engine` names the native
    engine option it sets (its C field, parsed from the environment and settable by name: generated)."""
    spec = dict(name=name, default=default, parse=parse, allowed=allowed, effect=effect, since=since,
                honoured_by=honoured_by, aliases=aliases, engine=engine)
    return field(default=default, metadata={"variable": spec})


@dataclass(frozen=True)
class PerseusConfig:
    nancheck: bool = variable(
        "PERSEUS_ALLREDUCE_NANCHECK", False, choice(_BOOL, "0 (off) or 1 (on)"), "0 or 1",
        "1: a non-finite reduced gradient raises an error naming the parameters",
        honoured_by=ENGINE_READERS, aliases=("PERSEUS_ALLREDUCE_NANHECK",), engine="nancheck")  # the manual's spelling
    dtype: WireDtype = variable(
        "PERSEUS_ALLREDUCE_DTYPE", WireDtype.FP16,
        choice({"0": WireDtype.FP16, "1": WireDtype.NONE, "2": WireDtype.MIXED},
               "0 (fp16 compression), 1 (no compression) or 2 (fp32 inside a node, fp16 between nodes)"),
        "0, 1 or 2", "wire dtype of fp32 gradients",
        honoured_by=ENGINE_READERS, engine="wire_dtype")
    mode: Optional[AllreduceMode] = variable(  # None: automatic (two levels when the wire dtype needs them)
        "PERSEUS_ALLREDUCE_MODE", None,
        choice({"0": AllreduceMode.FLAT, "1": AllreduceMode.HIERARCHICAL},
               "0 (one-level allreduce) or 1 (two levels: inside the node, then among node leaders)"),
        "0 or 1 (empty: automatic)", "one-level or two-level allreduce across nodes",
        honoured_by=ENGINE_READERS, engine="mode")
    streams: int = variable(
        "PERSEUS_ALLREDUCE_STREAMS", 4, int_range(1, 12), "1-12",
        "number of communicators that carry fused buffers concurrently; unset, 4 is an upper limit and the first "
        "large steps measure 1 against 4 and keep the fewest unless more are 3% faster (all ranks agree)",
        honoured_by=ENGINE_READERS, engine="streams")
    fusion: Optional[int] = variable(  # None: automatic granularity
        "PERSEUS_ALLREDUCE_FUSION", None, int_range(0, 128), "0-128 (empty: automatic)",
        "gradient fusion granularity handed to the fusion planner",
        honoured_by=ENGINE_READERS, engine="fusion")
    accumulate_n_steps: int = variable(
        "PERSEUS_ACCUMULATE_N_STEPS", 1, int_range(1, None), ">= 1",
        "communicate every n-th backward pass, accumulate locally otherwise")
    downsample_n_elements: int = variable(
        "PERSEUS_DOWNSAMPLE_N_ELEMENTS", 1, int_range(1, None), ">= 1",
        "send one element in n per step (gossip downsampling)")
    gradient_momentum: float = variable(
        "PERSEUS_GRADIENT_MOMENTUM", 1.0, float_range(0.0, 1.0, True), "0.0-1.0",
        "decay of the not-yet-sent gradient residual under downsampling")
    nccl_enable: bool = variable(
        "PERSEUS_NCCL_ENABLE", False, choice(_BOOL, "0 (off) or 1 (on)"), "0 or 1",
        "hybrid RDMA+VPC NCCL links (special build)", honoured_by=())
    gradient_scale: float = variable(
        "PERSEUS_ALLREDUCE_GRADIENT_SCALE", 10.0, float_range(0.0, None, False), "> 0",
        "factor applied before fp16 compression and removed after",
        honoured_by=ENGINE_READERS, engine="gradient_scale")
    offline_neg: bool = variable(
        "PERSEUS_OFFLINE_NEG", False, choice(_BOOL, "0 (off) or 1 (on)"), "0 or 1",
        "1: once two consecutive steps submit the same collectives, the native engine runs them from that agreed "
        "plan without negotiating each cycle; a rank that then leaves the plan fails every rank naming what differs",
        honoured_by=ENGINE_READERS, engine="offline_neg")
    shm_disable: bool = variable(
        "PERSEUS_SHM_DISABLE", False, choice(_BOOL, "0 (shared memory) or 1 (loopback TCP)"), "0 or 1",
        "1: a node's ranks exchange over loopback TCP, not shared memory (2 MiB of /dev/shm per rank and group; "
        "the engine falls back by itself without it)", since="2.0.0", honoured_by=ENGINE_READERS,
        engine="shm_disable")
    perf_check_n_steps: int = variable(
        "PERSEUS_PERF_CHECK_N_STEPS", 0, int_range(0, None), ">= 0",
        "every n steps, compare step times across ranks and report slow ones (0: off)")
    master_port: int = variable(
        "PERSEUS_MASTER_PORT", 6666, int_range(1, 65535), "1-65535",
        "port of the perseus rendezvous on MASTER_ADDR (must differ from MASTER_PORT)", honoured_by=ENGINE_READERS)
    nccl_network_interface: str = variable(
        "PERSEUS_NCCL_NETWORK_INTERFACE", "eth0", interface, "an interface of this machine",
        "network interface of NCCL communicators (NCCL_SOCKET_IFNAME unless set; eth0 where it exists)", honoured_by=("torch",))
    gloo_network_interface: str = variable(
        "PERSEUS_GLOO_NETWORK_INTERFACE", "eth0", interface, "an interface of this machine",
        "network interface of Gloo communicators (GLOO_SOCKET_IFNAME)",
        honoured_by=ENGINE_READERS, engine="iface")
    gloo_timeout_seconds: int = variable(
        "GLOO_TIMEOUT_SECONDS", 60, int_range(1, None), ">= 1",
        "timeout of the process groups and rendezvous perseus creates",
        honoured_by=ENGINE_READERS, engine="timeout_seconds")
    change_hvd_allgather: bool = variable(
        "PERSEUS_CHANGE_HVD_ALLGATHER", False, choice(_BOOL, "0 (stack) or 1 (concatenate)"), "0 or 1",
        "hvd.allgather: 0 stacks the ranks' tensors, 1 concatenates them (Horovod)")
    use_ddp_launcher: bool = variable(
        "PERSEUS_USE_DDP_LAUNCHER", True, choice(_BOOL, "0 (mpirun/perseusrun) or 1 (torch launcher)"), "0 or 1",
        "1: hvd.init() joins the torch launcher's rendezvous; 0: perseus's own (mpirun)")
    cpu_dispatch: str = variable(  # read by the native core itself (native/core/src/cpu/dispatch.cpp)
        "PERSEUS_CPU_DISPATCH", "auto", choice({p: p for p in CPU_DISPATCH_PATHS}, " | ".join(CPU_DISPATCH_PATHS)),
        " | ".join(CPU_DISPATCH_PATHS), "CPU kernels of compression: auto (the best this CPU runs) or one path",
        since="2.0.0", honoured_by=ENGINE_READERS)
    cycle_time_ms: float = variable(
        "PERSEUS_CYCLE_TIME_MS", 1.0, float_range(0.0, None, False), "> 0",
        "how often the native engine's ranks agree on the collectives submitted since the last cycle (ms)",
        since="2.0.0", honoured_by=ENGINE_READERS, engine="cycle_ms")
    engine_library: Optional[str] = variable(  # None: the one the package ships
        "PERSEUS_ENGINE_LIBRARY", None, existing_file, "the path of a libperseus_engine.so",
        "the native engine library the Python handle loads instead of the packaged one",
        since="2.0.0", honoured_by=ENGINE_RUNTIMES)
    mpi_bootstrap_library: Optional[str] = variable(  # None: the plugin for the MPI found at run time
        "PERSEUS_MPI_BOOTSTRAP_LIBRARY", None, existing_file, "the path of a libperseus_mpi_<mpi>.so",
        "the plugin through which the engine agrees rank 0's address under a plain mpirun",
        since="2.0.0", honoured_by=ENGINE_READERS)
    nccl_library: Optional[str] = variable(  # None: nvidia/nccl/lib on sys.path, a copy already loaded, the system
        "PERSEUS_NCCL_LIBRARY", None, existing_file, "the path of a libnccl.so.2",
        "the NCCL the engine loads for device buffers (docs/device.md); pip install nvidia-nccl-cu12 provides one",
        since="2.0.0", honoured_by=())
    cudart_library: Optional[str] = variable(  # None: nvidia/cuda_runtime/lib on sys.path, a loaded copy, the system
        "PERSEUS_CUDART_LIBRARY", None, existing_file, "the path of a libcudart.so.12",
        "the CUDA runtime the engine loads for device buffers (docs/device.md)", since="2.0.0", honoured_by=())
    engine_profile: bool = variable(  # read by the native engine (engine_pipeline.cc)
        "PERSEUS_ENGINE_PROFILE", False, choice(_BOOL, "0 (off) or 1 (on)"), "0 or 1",
        "1: each engine stream prints its pipeline stages' busy seconds on stderr at shutdown (perseus-engine-profile "
        "lines)", since="2.0.0", honoured_by=ENGINE_READERS)
    caffe_rank_weights: Optional[str] = variable(  # None: no file; read by the Caffe patch's `caffe train`
        "PERSEUS_CAFFE_RANK_WEIGHTS", None, path_prefix, "a path prefix in a writable folder",
        "caffe train: after training every rank writes its parameters to <prefix>.rank<N>.bin (replicas check)",
        since="1.5.0", honoured_by=CAFFE_LIBRARY)
    explicit: FrozenSet[str] = field(default_factory=frozenset)  # variable names the environment set

    def is_set(self, variable: str) -> bool:
        """Whether the environment set `variable` (as opposed to the default applying)."""
        return variable in self.explicit

    def compresses_between_nodes(self) -> bool:
        return self.dtype in (WireDtype.FP16, WireDtype.MIXED)

    def compresses_inside_node(self) -> bool:
        return self.dtype == WireDtype.FP16

    def hierarchical(self, num_nodes: int, local_size: int) -> bool:
        """Whether the allreduce runs in two levels for a job of `num_nodes` nodes of `local_size` ranks."""
        if num_nodes <= 1 or local_size <= 1:
            return False  # one of the two levels would be empty
        if self.mode is not None:
            return self.mode == AllreduceMode.HIERARCHICAL
        return self.dtype == WireDtype.MIXED


VARIABLES: Tuple[VariableSpec, ...] = tuple(
    VariableSpec(field=f.name, **f.metadata["variable"]) for f in fields(PerseusConfig) if "variable" in f.metadata
)
VARIABLE_NAMES: FrozenSet[str] = frozenset(spec.name for spec in VARIABLES)
_BY_NAME: Dict[str, VariableSpec] = {spec.name: spec for spec in VARIABLES}
_ALIASES: Dict[str, VariableSpec] = {alias: spec for spec in VARIABLES for alias in spec.aliases}


def spec_of(name: str) -> VariableSpec:
    """The declaration of a variable (or of the variable an alias spells)."""
    spec = _BY_NAME.get(name) or _ALIASES.get(name)
    if spec is None:
        raise KeyError("unknown perseus variable {}".format(name))
    return spec


def parse_value(name: str, raw: str) -> Any:
    """One variable's value by its one rule; ConfigError names the variable, the value and what is allowed."""
    spec = spec_of(name)
    try:
        return spec.parse(raw)
    except ValueError as allowed:
        raise ConfigError("{}={!r} is not allowed: expected {}".format(name, raw, allowed)) from None


def _setting(spec: VariableSpec, environ: Mapping[str, str]) -> Tuple[str, Optional[str]]:
    """(the name it was set under, its value) or (name, None) when unset; the declared name wins over an alias."""
    for name in (spec.name,) + spec.aliases:
        raw = environ.get(name)
        if raw is not None and raw.strip() != "":
            return name, raw
    return spec.name, None


def _validate_combination(values: Dict[str, Any]) -> None:
    if values.get("mode") == AllreduceMode.FLAT and values.get("dtype") == WireDtype.MIXED:
        raise ConfigError(
            "PERSEUS_ALLREDUCE_MODE=0 (one-level allreduce) cannot be combined with PERSEUS_ALLREDUCE_DTYPE=2, "
            "which sends fp32 inside a node and fp16 between nodes and therefore needs two levels: "
            "unset PERSEUS_ALLREDUCE_MODE or set it to 1, or choose PERSEUS_ALLREDUCE_DTYPE 0 or 1"
        )


def load(environ: Optional[Mapping[str, str]] = None) -> PerseusConfig:
    """Read and validate every variable of `VARIABLES` from `environ` (default: os.environ)."""
    environ = os.environ if environ is None else environ
    values: Dict[str, Any] = {}
    explicit: Set[str] = set()
    for spec in VARIABLES:
        name, raw = _setting(spec, environ)
        if raw is None:
            continue
        values[spec.field] = parse_value(name, raw)
        explicit.add(spec.name)
    _validate_combination(values)
    return PerseusConfig(explicit=frozenset(explicit), **values)


_current: Optional[PerseusConfig] = None


def get() -> PerseusConfig:
    """The configuration of this process, read from os.environ on first use."""
    global _current
    if _current is None:
        _current = load()
    return _current


def reload(environ: Optional[Mapping[str, str]] = None) -> PerseusConfig:
    """Read the environment again (after a change to os.environ) and make it the process's configuration."""
    global _current
    _current = load(environ)
    return _current


_warned: Set[str] = set()


def warn_not_honoured(variable: str, reason: str, config: Optional[PerseusConfig] = None) -> bool:
    """Warn once per process that `variable` is set but has no effect here, and why.

    Only a variable the environment set explicitly is reported (a default is not the user's choice).
    Returns whether a warning was issued.
    """
    config = get() if config is None else config
    if variable not in VARIABLE_NAMES:
        raise KeyError("unknown perseus variable {}".format(variable))
    if not config.is_set(variable) or variable in _warned:
        return False
    _warned.add(variable)
    warnings.warn("{} is set but not honoured: {}".format(variable, reason), NotHonouredWarning, stacklevel=2)
    return True


def show(value: Any) -> str:
    """A value as its variable spells it: 0/1 for booleans and enums, "auto" for an automatic choice."""
    if value is None:
        return "auto"
    return str(int(value)) if isinstance(value, (bool, enum.IntEnum)) else str(value)


def describe(config: PerseusConfig) -> List[Tuple[str, str, str]]:
    """(variable, value, "set"/"default") for every variable: what `perseus doctor` prints."""
    return [(spec.name, show(getattr(config, spec.field)), "set" if config.is_set(spec.name) else "default")
            for spec in VARIABLES]


__all__ = ["AllreduceMode", "parse_value", "show", "spec_of", "ConfigError", "NotHonouredWarning", "PerseusConfig", "VARIABLES",
           "VARIABLE_NAMES", "VariableSpec", "WireDtype", "describe", "get", "load", "network_interfaces", "reload",
           "warn_not_honoured"]
