"""The variables perseusrun gives every rank, and the validation of the ones it reads."""

import re
import socket
from typing import Dict, List, Mapping, Optional, Tuple

from .. import config, horovod_variables, variable_names
from .errors import UsageError

# The variables perseusrun sets for each rank; passing them with -x would contradict the plan.
RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                  "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "PERSEUS_MASTER_PORT", "PERSEUS_LAUNCHER",
                  "PERSEUS_STORE_ADDR", "HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE",
                  "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE", "HOROVOD_HOSTNAME")
# Forwarded to ranks that do not inherit this environment (ssh and mpirun ranks), besides -x ones.
FORWARD_NAMES = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX")
FORWARD_PREFIXES = ("PERSEUS_", "NCCL_", "GLOO_", "HOROVOD_")  # HOROVOD_*: a Horovod job's settings (horovod_variables)
# seed: PERSEUS_<LIB>_NETWORK_INTERFACE picks the NIC of that library.
INTERFACE_VARIABLES = (("PERSEUS_NCCL_NETWORK_INTERFACE", "NCCL_SOCKET_IFNAME"),
                       ("PERSEUS_GLOO_NETWORK_INTERFACE", "GLOO_SOCKET_IFNAME"))
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def gloo_timeout(environ: Mapping[str, str]) -> float:
    """GLOO_TIMEOUT_SECONDS by the runtime's own rule (perseus.config), so perseusrun never accepts a value
    the ranks would refuse."""
    raw = environ.get("GLOO_TIMEOUT_SECONDS", "").strip()
    if not raw:
        return float(config.spec_of("GLOO_TIMEOUT_SECONDS").default)
    try:
        return float(config.parse_value("GLOO_TIMEOUT_SECONDS", raw))
    except config.ConfigError as exc:
        raise UsageError("{} (the ranks would refuse it; fix or unset it)".format(exc)) from None


def interfaces(environ: Mapping[str, str], check_local: bool) -> Dict[str, str]:
    """NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME from the PERSEUS_* choices (only those that are set)."""
    chosen: Dict[str, str] = {}
    local_names: Optional[List[str]] = None
    for perseus_name, library_name in INTERFACE_VARIABLES:
        value = environ.get(perseus_name, "").strip()
        if not value:
            continue
        if not re.fullmatch(r"[A-Za-z0-9_.:@-]{1,15}(,[A-Za-z0-9_.:@-]{1,15})*", value):
            raise UsageError("{}={!r} is not a network interface name (e.g. eth0)".format(perseus_name, value))
        already = environ.get(library_name, "").strip()
        if already and already != value:
            raise UsageError("{}={} and {}={} name different interfaces; set only one of them".format(
                perseus_name, value, library_name, already))
        if check_local:
            if local_names is None:
                local_names = [name for _, name in socket.if_nameindex()]
            missing = [n for n in value.split(",") if n not in local_names]
            if missing:
                raise UsageError("{}={}: no network interface {} on this host (it has {})".format(
                    perseus_name, value, ", ".join(missing), ", ".join(local_names)))
        chosen[library_name] = value
    return chosen


def exports(requested: List[Tuple[str, Optional[str]]], environ: Mapping[str, str]) -> Dict[str, str]:
    """-x NAME=VALUE / -x NAME (value taken from this environment)."""
    result: Dict[str, str] = {}
    for name, value in requested:
        if not _NAME.fullmatch(name):
            raise UsageError("-x {!r}: not a variable name (write -x NAME or -x NAME=VALUE)".format(name))
        if name in RANK_VARIABLES:
            raise UsageError("-x {}: perseusrun sets {} for every rank itself; to choose it, set it in the "
                             "environment of perseusrun (MASTER_ADDR, MASTER_PORT, PERSEUS_MASTER_PORT) or drop it".format(name, name))
        if value is None:
            if name not in environ:
                raise UsageError("-x {}: {} is not set here; export it first or write -x {}=VALUE".format(name, name, name))
            value = environ[name]
        result[name] = value
    return result


def forwarded(environ: Mapping[str, str]) -> Dict[str, str]:
    return {k: v for k, v in sorted(environ.items())
            if k in FORWARD_NAMES or (k.startswith(FORWARD_PREFIXES) and k not in RANK_VARIABLES)}


def validate_perseus_variables(environ: Mapping[str, str]) -> None:
    """Every PERSEUS_* value the ranks will read, checked by perseus.config before anything starts."""
    try:
        translated = dict(environ)
        horovod_variables.translate(translated)  # what the ranks will read: HOROVOD_* settings included
        config.load(translated)
    except config.ConfigError as exc:
        raise UsageError("{} (the ranks would refuse it; fix or unset it)".format(exc)) from None


def variable_messages(environ: Mapping[str, str]) -> List[str]:
    """What perseusrun says before it starts: unknown PERSEUS_* names ("did you mean") and accepted aliases."""
    try:
        horovod = [r.warning for r in horovod_variables.read(environ) if r.warning]
    except config.ConfigError:
        horovod = []  # validate_perseus_variables refuses the value with its message
    return (["warning: " + m for m in variable_names.unknown_variable_messages(environ)]
            + ["note: " + m for m in variable_names.alias_notes(environ)] + ["warning: " + m for m in horovod])

