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
import math
import os
import socket
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Set, Tuple


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


@dataclass(frozen=True)
class PerseusConfig:
    nancheck: bool = False
    dtype: WireDtype = WireDtype.FP16
    mode: Optional[AllreduceMode] = None  # None: automatic (two levels when the wire dtype needs them)
    streams: int = 4
    fusion: Optional[int] = None  # None: automatic granularity
    accumulate_n_steps: int = 1
    downsample_n_elements: int = 1
    gradient_momentum: float = 1.0
    nccl_enable: bool = False
    gradient_scale: float = 10.0
    offline_neg: bool = False
    perf_check_n_steps: int = 0
    master_port: int = 6666
    nccl_network_interface: str = "eth0"
    gloo_network_interface: str = "eth0"
    gloo_timeout_seconds: int = 60
    change_hvd_allgather: bool = False
    use_ddp_launcher: bool = True
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


Parser = Callable[[str], Any]


@dataclass(frozen=True)
class VariableSpec:
    name: str
    field: str
    parse: Parser  # str -> value; raises ValueError with the allowed values/range
    allowed: str  # human text of what is allowed
    effect: str  # one line: what the variable changes


def _choice(choices: Dict[str, Any], allowed: str) -> Parser:
    def parse(raw: str) -> Any:
        if raw.strip() not in choices:
            raise ValueError(allowed)
        return choices[raw.strip()]

    return parse


def _int_range(low: int, high: Optional[int]) -> Parser:
    def parse(raw: str) -> int:
        try:
            value = int(raw.strip(), 10)
        except ValueError:
            raise ValueError(_range_text(low, high)) from None
        if value < low or (high is not None and value > high):
            raise ValueError(_range_text(low, high))
        return value

    return parse


def _range_text(low: float, high: Optional[float]) -> str:
    if high is None:
        return "an integer >= {}".format(low)
    return "an integer from {} to {}".format(low, high)


def _float_range(low: float, high: Optional[float], low_inclusive: bool) -> Parser:
    text = "a number {} {}{}".format(">=" if low_inclusive else ">", low, "" if high is None else " and <= {}".format(high))

    def parse(raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ValueError(text) from None
        too_low = value < low if low_inclusive else value <= low
        if math.isnan(value) or math.isinf(value) or too_low or (high is not None and value > high):
            raise ValueError(text)
        return value

    return parse


def _interface(raw: str) -> str:
    name = raw.strip()
    present = network_interfaces()
    if name not in present:
        raise ValueError("a network interface of this machine: {}".format(", ".join(sorted(present)) or "(none found)"))
    return name


def network_interfaces() -> List[str]:
    try:
        return [entry[1] for entry in socket.if_nameindex()]
    except OSError:
        return []


_BOOL = {"0": False, "1": True}

VARIABLES: Tuple[VariableSpec, ...] = (
    VariableSpec("PERSEUS_ALLREDUCE_NANCHECK", "nancheck", _choice(_BOOL, "0 (off) or 1 (on)"), "0 or 1",
                 "1: a non-finite reduced gradient raises an error naming the parameters"),
    VariableSpec("PERSEUS_ALLREDUCE_DTYPE", "dtype",
                 _choice({"0": WireDtype.FP16, "1": WireDtype.NONE, "2": WireDtype.MIXED},
                         "0 (fp16 compression), 1 (no compression) or 2 (fp32 inside a node, fp16 between nodes)"),
                 "0, 1 or 2", "wire dtype of fp32 gradients"),
    VariableSpec("PERSEUS_ALLREDUCE_MODE", "mode",
                 _choice({"0": AllreduceMode.FLAT, "1": AllreduceMode.HIERARCHICAL},
                         "0 (one-level allreduce) or 1 (two levels: inside the node, then among node leaders)"),
                 "0 or 1 (empty: automatic)", "one-level or two-level allreduce across nodes"),
    VariableSpec("PERSEUS_ALLREDUCE_STREAMS", "streams", _int_range(1, 12), "1-12",
                 "number of communicators that carry fused buffers concurrently"),
    VariableSpec("PERSEUS_ALLREDUCE_FUSION", "fusion", _int_range(0, 128), "0-128 (empty: automatic)",
                 "gradient fusion granularity handed to the fusion planner"),
    VariableSpec("PERSEUS_ACCUMULATE_N_STEPS", "accumulate_n_steps", _int_range(1, None), ">= 1",
                 "communicate every n-th backward pass, accumulate locally otherwise"),
    VariableSpec("PERSEUS_DOWNSAMPLE_N_ELEMENTS", "downsample_n_elements", _int_range(1, None), ">= 1",
                 "send one element in n per step (gossip downsampling)"),
    VariableSpec("PERSEUS_GRADIENT_MOMENTUM", "gradient_momentum", _float_range(0.0, 1.0, True), "0.0-1.0",
                 "decay of the not-yet-sent gradient residual under downsampling"),
    VariableSpec("PERSEUS_NCCL_ENABLE", "nccl_enable", _choice(_BOOL, "0 (off) or 1 (on)"), "0 or 1",
                 "hybrid RDMA+VPC NCCL links (special build)"),
    VariableSpec("PERSEUS_ALLREDUCE_GRADIENT_SCALE", "gradient_scale", _float_range(0.0, None, False), "> 0",
                 "factor applied before fp16 compression and removed after"),
    VariableSpec("PERSEUS_OFFLINE_NEG", "offline_neg", _choice(_BOOL, "0 (off) or 1 (on)"), "0 or 1",
                 "offline gradient negotiation"),
    VariableSpec("PERSEUS_PERF_CHECK_N_STEPS", "perf_check_n_steps", _int_range(0, None), ">= 0",
                 "every n steps, compare step times across ranks and report slow ones (0: off)"),
    VariableSpec("PERSEUS_MASTER_PORT", "master_port", _int_range(1, 65535), "1-65535",
                 "port of the perseus rendezvous on MASTER_ADDR (must differ from MASTER_PORT)"),
    VariableSpec("PERSEUS_NCCL_NETWORK_INTERFACE", "nccl_network_interface", _interface, "an interface of this machine",
                 "network interface of NCCL communicators (NCCL_SOCKET_IFNAME)"),
    VariableSpec("PERSEUS_GLOO_NETWORK_INTERFACE", "gloo_network_interface", _interface, "an interface of this machine",
                 "network interface of Gloo communicators"),
    VariableSpec("GLOO_TIMEOUT_SECONDS", "gloo_timeout_seconds", _int_range(1, None), ">= 1",
                 "timeout of the process groups and rendezvous perseus creates"),
    VariableSpec("PERSEUS_CHANGE_HVD_ALLGATHER", "change_hvd_allgather", _choice(_BOOL, "0 (stack) or 1 (concatenate)"),
                 "0 or 1", "hvd.allgather: 0 stacks the ranks' tensors, 1 concatenates them (Horovod)"),
    VariableSpec("PERSEUS_USE_DDP_LAUNCHER", "use_ddp_launcher", _choice(_BOOL, "0 (mpirun/perseusrun) or 1 (torch launcher)"),
                 "0 or 1", "1: hvd.init() joins the torch launcher's rendezvous; 0: perseus's own (mpirun)"),
)

VARIABLE_NAMES: FrozenSet[str] = frozenset(spec.name for spec in VARIABLES)


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
        raw = environ.get(spec.name)
        if raw is None or raw.strip() == "":
            continue
        try:
            values[spec.field] = spec.parse(raw)
        except ValueError as allowed:
            raise ConfigError("{}={!r} is not allowed: expected {}".format(spec.name, raw, allowed)) from None
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


def describe(config: PerseusConfig) -> List[Tuple[str, str, str]]:
    """(variable, value, "set"/"default") for every variable: what `perseus doctor` prints."""
    rows = []
    for spec in VARIABLES:
        value = getattr(config, spec.field)
        shown = "auto" if value is None else (str(int(value)) if isinstance(value, (bool, enum.IntEnum)) else str(value))
        rows.append((spec.name, shown, "set" if config.is_set(spec.name) else "default"))
    return rows


__all__ = [
    "AllreduceMode",
    "ConfigError",
    "NotHonouredWarning",
    "PerseusConfig",
    "VARIABLES",
    "VARIABLE_NAMES",
    "VariableSpec",
    "WireDtype",
    "describe",
    "get",
    "load",
    "network_interfaces",
    "reload",
    "warn_not_honoured",
]
