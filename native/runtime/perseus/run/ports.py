"""MASTER_PORT and PERSEUS_MASTER_PORT: validated, checked for use on this machine, never the same port; a port
perseusrun picks is held until the job serves it."""

import errno
import socket
from dataclasses import dataclass
from typing import Mapping, Optional

from .errors import UsageError

REMOTE_MASTER_PORT_DEFAULT = 29500  # torchrun's default, used when the master host is not this machine


@dataclass(frozen=True)
class Ports:
    master_port: int
    perseus_master_port: Optional[int]  # only when the user set it
    notes: tuple  # what perseusrun picked or moved, for the plan
    held: Optional["HeldPort"] = None  # the MASTER_PORT perseusrun picked, still bound by it


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


class HeldPort:
    """A port perseusrun chose, kept bound (SO_REUSEADDR, never listening) from the choice until the rank that
    serves it listens there: meanwhile no other process, another perseusrun included, is given it by bind(0),
    while torch's TCPStore (which binds with SO_REUSEADDR too) can still take it."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock: Optional[socket.socket] = sock
        self.port: int = sock.getsockname()[1]

    @property
    def held(self) -> bool:
        return self._sock is not None

    def served(self) -> bool:
        """Whether something now listens on the port (the rank serving it bound it)."""
        return in_use(self.port)

    def release(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def reserve() -> HeldPort:
    """A free port, held. bind(0) picks a port no socket is bound to (the kernel prefers those over sharing
    an SO_REUSEADDR one), so two perseusrun started at once get different ports."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("", 0))
    except OSError:
        sock.close()
        raise
    return HeldPort(sock)


def choose(environ: Mapping[str, str], master_is_local: bool) -> Ports:
    """The job's ports. An explicit MASTER_PORT is validated (and, on a local master, must be free); else a free
    one is reserved and held (Ports.held) until the job serves it. PERSEUS_MASTER_PORT is passed on only when
    the user set it (perseus then keeps its own store there); unset, perseus joins torch's store on MASTER_PORT."""
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
    held: Optional[HeldPort] = None
    master = explicit_master
    if master is None:
        if master_is_local:
            while held is None or held.port == explicit_perseus:
                if held is not None:
                    held.release()
                held = reserve()
            master = held.port
            notes.append("MASTER_PORT={} (a free port picked on this machine, held until rank 0 serves it)".format(master))
        else:
            master = REMOTE_MASTER_PORT_DEFAULT if explicit_perseus != REMOTE_MASTER_PORT_DEFAULT else REMOTE_MASTER_PORT_DEFAULT + 1
            notes.append("MASTER_PORT={} (default; set MASTER_PORT to choose)".format(master))
    return Ports(master, explicit_perseus, tuple(notes), held)


def _read(environ: Mapping[str, str], name: str) -> Optional[int]:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    return parse_port(name, raw)
