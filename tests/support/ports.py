"""Free TCP ports on 127.0.0.1 for test jobs (tests never use fixed ports): the one helper every folder imports."""

import socket
from typing import List


def free_ports(n: int) -> List[int]:
    """`n` distinct ports that were free a moment ago (all bound at once, then released)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]
