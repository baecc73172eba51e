"""The shared netns harness of the benchmarks: two network namespaces joined by a veth pair
(10.77.0.1 <-> 10.77.0.2, named eth0 inside, traffic only between them), each side shaped with
`tc qdisc ... tbf` (default 1 Gbit/s: a small model of the seed's VPC). Needs root (ip netns, tc); the
namespaces are removed on exit, also on failure. Used by ddp_bench.py and engine_allreduce_bench.py.

    with Link("1gbit") as link:
        subprocess.Popen(link.command(0, [sys.executable, "rank.py"]), env=...)   # rank 0 in namespace a
"""

import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Sequence

ADDRESSES = ("10.77.0.1", "10.77.0.2")


def missing_requirement() -> Optional[str]:
    """Why this machine cannot build the link (None when it can)."""
    if os.geteuid() != 0:
        return "needs root (ip netns, tc)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return "needs {} (apt-get install iproute2)".format(tool)
    return None


class Link:
    """Two namespaces, a veth pair between them renamed eth0 on both sides, each side shaped by tbf."""

    def __init__(self, rate: str) -> None:
        tag = str(os.getpid())
        self.namespaces = ("perseus-bench-a-" + tag, "perseus-bench-b-" + tag)
        self.veths = ("pba" + tag[-8:], "pbb" + tag[-8:])
        self.rate = rate

    def __enter__(self) -> "Link":
        try:
            for ns in self.namespaces:
                _ip("netns", "add", ns)
            _ip("link", "add", self.veths[0], "type", "veth", "peer", "name", self.veths[1])
            for ns, veth, address in zip(self.namespaces, self.veths, ADDRESSES):
                _ip("link", "set", veth, "netns", ns)
                _in(ns, "ip", "link", "set", veth, "name", "eth0")
                _in(ns, "ip", "addr", "add", address + "/24", "dev", "eth0")
                _in(ns, "ip", "link", "set", "eth0", "up")
                _in(ns, "ip", "link", "set", "lo", "up")
                _in(ns, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", self.rate, "burst", "256kb",
                    "latency", "50ms")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *_: object) -> None:
        for ns in self.namespaces:  # deleting a namespace deletes the veth end inside it (and its peer)
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL, check=False)

    def command(self, side: int, argv: Sequence[str]) -> List[str]:
        """argv run inside namespace `side` (0: 10.77.0.1, 1: 10.77.0.2)."""
        return ["ip", "netns", "exec", self.namespaces[side]] + list(argv)


def tx_bytes() -> int:
    """Bytes this namespace's eth0 has sent (`ip netns exec` mounts the namespace's own /sys)."""
    return int(Path("/sys/class/net/eth0/statistics/tx_bytes").read_text())


def _ip(*args: str) -> None:
    subprocess.run(["ip"] + list(args), check=True)


def _in(ns: str, *args: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns] + list(args), check=True)
