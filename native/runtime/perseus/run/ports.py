"""MASTER_PORT and PERSEUS_MASTER_PORT: validated, checked for use on this machine, never the same port."""

import errno
import socket
from dataclasses import dataclass
from typing import Mapping, Optional

from .. import config
from .errors import UsageError

PERSEUS_MASTER_PORT_DEFAULT = config.spec_of("PERSEUS_MASTER_PORT").default  # seed: 6666
REMOTE_MASTER_PORT_DEFAULT = 29500  # torchrun's default, used when the master host is not this machine


@dataclass(frozen=True)
class Ports:
    master_port: int
    perseus_master_port: int
    notes: tuple  # what perseusrun picked or moved, for the plan


def parse_port(name: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise UsageError("{}={!r} is not a port number; set it to an integer 1-65535 or unset it".format(name, raw)) from None
    if not 1 <= value <= 65535:
        raise UsageError("{}={} is out of range; set it to an integer 1-65535 or unset it".format(name, raw))
    return value


def in_use(port: int) -> bool:
    """True when something on this machine listens on `port` (SO_REUSEADDR, as torch's TCPStore binds)."""
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue
        with s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                s.bind((address, port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return True
                if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                    continue
                raise
    return False


def free_port(avoid: int) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        if port != avoid:
            return port


def choose(environ: Mapping[str, str], master_is_local: bool) -> Ports:
    """Both ports of the job. Explicit values are validated (and, on a local master, must be free);
    defaults are picked so that they are free and differ from each other."""
    notes = []
    explicit_master = _read(environ, "MASTER_PORT")
    explicit_perseus = _read(environ, "PERSEUS_MASTER_PORT")
    if explicit_master is not None and explicit_master == explicit_perseus:
        raise UsageError(
            "MASTER_PORT and PERSEUS_MASTER_PORT are both {}: torch.distributed's rendezvous and the perseus "
            "rendezvous listen on the same master address, so they need different ports (unset one of them)".format(explicit_master))
    if master_is_local:
        for name, port in (("MASTER_PORT", explicit_master), ("PERSEUS_MASTER_PORT", explicit_perseus)):
            if port is not None and in_use(port):
                raise UsageError("{}={}: the port is already in use on this machine; stop what listens there "
                                 "or choose another free port".format(name, port))
    perseus = explicit_perseus
    if perseus is None:
        perseus = PERSEUS_MASTER_PORT_DEFAULT
        while perseus == explicit_master or (master_is_local and in_use(perseus)):
            perseus += 1
        if perseus != PERSEUS_MASTER_PORT_DEFAULT:
            notes.append("PERSEUS_MASTER_PORT={} (the default {} is {})".format(
                perseus, PERSEUS_MASTER_PORT_DEFAULT,
                "MASTER_PORT" if explicit_master == PERSEUS_MASTER_PORT_DEFAULT else "in use"))
    master = explicit_master
    if master is None:
        if master_is_local:
            master = free_port(avoid=perseus)
            notes.append("MASTER_PORT={} (a free port picked on this machine)".format(master))
        else:
            master = REMOTE_MASTER_PORT_DEFAULT if perseus != REMOTE_MASTER_PORT_DEFAULT else REMOTE_MASTER_PORT_DEFAULT + 1
            notes.append("MASTER_PORT={} (default; set MASTER_PORT to choose)".format(master))
    return Ports(master, perseus, tuple(notes))


def _read(environ: Mapping[str, str], name: str) -> Optional[int]:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    return parse_port(name, raw)
