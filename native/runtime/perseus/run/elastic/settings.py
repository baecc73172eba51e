"""The elastic options of perseusrun's command line, checked as horovodrun means them."""

import argparse
import os
from dataclasses import replace

from ..errors import UsageError
from ..hosts import parse_hostfile, parse_hosts
from ..options import Options

DEFAULT_TIMEOUT = 600
COOLDOWN_LIMITS = (1, 3600)  # horovodrun's bounds of --blacklist-cooldown-range


def apply(options: Options, ns: argparse.Namespace) -> Options:
    """`options` with the elastic settings of `ns`; a bad combination is a UsageError naming the fix."""
    elastic = ns.min_np is not None or ns.host_discovery_script is not None
    if not elastic:
        given = [flag for flag, value in (("--max-np", ns.max_np), ("--slots-per-host", ns.slots_per_host),
                                          ("--elastic-timeout", ns.elastic_timeout), ("--reset-limit", ns.reset_limit),
                                          ("--blacklist-cooldown-range", ns.cooldown_range)) if value is not None]
        if given:
            raise UsageError("{} is an elastic option; elastic mode needs --min-np or --host-discovery-script".format(given[0]))
        return options
    if options.mode == "mpi":
        raise UsageError("--mpi cannot run an elastic job (--min-np / --host-discovery-script): elastic mode is Gloo "
                         "only, perseusrun itself starts and re-forms the workers; drop --mpi")
    min_np = ns.min_np if ns.min_np is not None else options.np
    if min_np < 1:
        raise UsageError("--min-np {}: must be at least 1".format(min_np))
    if min_np > options.np:
        raise UsageError("--min-np {} is above -np {}: -np is the number of processes training starts with, at least "
                         "--min-np".format(min_np, options.np))
    if ns.max_np is not None and ns.max_np < options.np:
        raise UsageError("--max-np {} is below -np {}; raise --max-np or lower -np".format(ns.max_np, options.np))
    for flag, value, low in (("--slots-per-host", ns.slots_per_host, 1), ("--elastic-timeout", ns.elastic_timeout, 1),
                             ("--reset-limit", ns.reset_limit, 0)):
        if value is not None and value < low:
            raise UsageError("{} {}: must be at least {}".format(flag, value, low))
    cooldown = tuple(ns.cooldown_range) if ns.cooldown_range is not None else None
    if cooldown is not None:
        low, high = cooldown
        if not COOLDOWN_LIMITS[0] <= low <= high <= COOLDOWN_LIMITS[1]:
            raise UsageError("--blacklist-cooldown-range {} {}: give MIN MAX seconds with {} <= MIN <= MAX <= {}".format(
                low, high, *COOLDOWN_LIMITS))
    script = ns.host_discovery_script
    fixed = None
    if script is not None:
        if options.hosts is not None or options.hostfile is not None:
            raise UsageError("--host-discovery-script and {} both name the hosts; give one of them".format(
                "-H" if options.hosts is not None else "--hostfile"))
        path = script.split()[0] if script.split() else ""
        if os.sep in path and not os.path.isfile(path):
            raise UsageError("--host-discovery-script {}: no such file".format(script))
    elif options.hosts is not None:
        fixed = parse_hosts(options.hosts)
    elif options.hostfile is not None:
        fixed = parse_hostfile(options.hostfile)
    else:
        raise UsageError("--min-np needs the hosts: --host-discovery-script SCRIPT (hosts that change) or "
                         "-H/--hostfile (a fixed list)")
    timeout = ns.elastic_timeout or _timeout_from_environment() or DEFAULT_TIMEOUT
    return replace(options, min_np=min_np, max_np=ns.max_np, host_discovery_script=script,
                   slots_per_host=ns.slots_per_host, elastic_timeout=timeout,
                   reset_limit=ns.reset_limit, cooldown_range=cooldown, fixed_hosts=fixed)


def _timeout_from_environment() -> int:
    """HOROVOD_ELASTIC_TIMEOUT (horovodrun reads it when --elastic-timeout is not given), 0 when unset."""
    raw = os.environ.get("HOROVOD_ELASTIC_TIMEOUT", "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError("HOROVOD_ELASTIC_TIMEOUT={!r}: give whole seconds (at least 1) or unset it".format(raw))
    return int(raw)
