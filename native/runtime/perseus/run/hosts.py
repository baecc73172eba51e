"""Hosts and slots from `-H host1:N,host2:N` or a hostfile, and whether a host is this machine."""

import errno
import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import List, Optional

from .errors import UsageError

_HOSTNAME = re.compile(r"(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?")


@dataclass(frozen=True)
class HostSlots:
    host: str
    slots: int


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_HOSTNAME.fullmatch(host)) and not host.replace(".", "").isdigit()


def _parse_entry(entry: str, where: str) -> HostSlots:
    entry = entry.strip()
    match = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](?::(.*))?", entry)  # [fe80::1]:4
    if match:
        host, slots = match.group(1), match.group(2)
    elif entry.count(":") > 1:  # a bare IPv6 address, no slots
        host, slots = entry, None
    else:
        host, _, slots = entry.partition(":")
        slots = slots if ":" in entry else None
    if not host or not _valid_host(host):
        raise UsageError("{}: {!r} is not a host name or IP address (write HOST:SLOTS, e.g. 10.0.0.2:8)".format(where, entry))
    if slots is None:
        return HostSlots(host, 1)
    if not re.fullmatch(r"\d+", slots or "") or int(slots) < 1:
        raise UsageError("{}: the slots of {!r} must be a positive integer (HOST:SLOTS, e.g. {}:8)".format(where, entry, host))
    return HostSlots(host, int(slots))


def _no_duplicates(hosts: List[HostSlots], where: str) -> List[HostSlots]:
    seen = set()
    for h in hosts:
        if h.host in seen:
            raise UsageError("{}: host {} is listed twice; give it once with all its slots ({}:N)".format(where, h.host, h.host))
        seen.add(h.host)
    return hosts


def parse_hosts(value: str) -> List[HostSlots]:
    """`-H host1:8,host2:8` (a host without `:N` has 1 slot, as in horovodrun)."""
    entries = [e for e in value.split(",")]
    if not value.strip() or any(not e.strip() for e in entries):
        raise UsageError("-H {!r}: empty host entry; write -H host1:N,host2:N".format(value))
    return _no_duplicates([_parse_entry(e, "-H") for e in entries], "-H")


def parse_hostfile(path: str) -> List[HostSlots]:
    """One host per line: `host slots=N` (Open MPI / horovodrun), `host:N` or `host`; `#` starts a comment."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise UsageError("--hostfile {}: {} (write one `HOST slots=N` per line)".format(path, exc.strerror or exc)) from None
    hosts: List[HostSlots] = []
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        where = "{}:{}".format(path, number)
        match = re.fullmatch(r"(\S+)\s+slots\s*=\s*(\S+)(?:\s+max[-_]slots\s*=\s*\d+)?", line)
        if match:
            hosts.append(_parse_entry("{}:{}".format(_bracket(match.group(1)), match.group(2)), where))
        elif re.fullmatch(r"\S+", line):
            hosts.append(_parse_entry(line, where))
        else:
            raise UsageError("{}: cannot read {!r}; write `HOST slots=N`".format(where, line))
    if not hosts:
        raise UsageError("--hostfile {}: no hosts in the file (write one `HOST slots=N` per line)".format(path))
    return _no_duplicates(hosts, "--hostfile " + path)


def _bracket(host: str) -> str:
    return "[{}]".format(host) if host.count(":") > 1 and not host.startswith("[") else host


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_local(host: str) -> bool:
    """True when `host` names this machine (in this network namespace): it can bind one of its addresses."""
    if is_loopback(host) or host in (socket.gethostname(), socket.getfqdn()):
        return True
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        return False
    for family, _, _, _, address in infos:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((address[0], 0))
                return True
        except OSError as exc:
            if exc.errno != errno.EADDRNOTAVAIL:
                continue
    return False


def resolve_error(host: str) -> Optional[str]:
    """Why `host` cannot be resolved, or None when it can."""
    try:
        socket.getaddrinfo(host, None)
        return None
    except socket.gaierror as exc:
        return str(exc)
