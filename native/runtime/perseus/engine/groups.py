"""Engines over a subset of a job's ranks (Horovod's process sets): each subset gets an engine of its own, with
its own negotiation, stores and transport contexts, so collectives on disjoint sets run concurrently and never
wait for ranks outside their set.

`subgroup_engine(parent, ranks, label)` is collective over every rank of `parent`: the set's first member picks
a free port and serves the set's store; one allgather on `parent` tells every rank each member's node, the
first member's IPv4 address and that port; the members then rendezvous (ranks numbered by their order in the
set, nodes renumbered over the set). Non-members get None.
"""

import socket
import struct
from typing import Any, Dict, List, Optional, Sequence

from . import Engine, EngineError

_RECORD = 3  # node, IPv4 address as an integer, port


def normalise_ranks(ranks: Sequence[int], size: int) -> List[int]:
    """The set's ranks, sorted; a rank outside the job, a repeated rank or an empty set is an error."""
    chosen = [int(r) for r in ranks]
    if not chosen:
        raise ValueError("a process set needs at least one rank")
    if len(set(chosen)) != len(chosen):
        raise ValueError("a process set lists a rank twice: {}".format(sorted(chosen)))
    outside = [r for r in chosen if not 0 <= r < size]
    if outside:
        raise ValueError("ranks {} are not ranks of this {}-rank job".format(outside, size))
    return sorted(chosen)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def _reachable_address(toward: str) -> str:
    """This host's IPv4 address on the route to `toward` (the job's master): the one other ranks reach it at."""
    if toward in ("", "127.0.0.1", "localhost"):
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((socket.gethostbyname(toward), 9))  # no packet is sent: only the route is chosen
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def _to_int(address: str) -> int:
    return int(struct.unpack("!I", socket.inet_aton(address))[0])


def _to_address(value: int) -> str:
    return socket.inet_ntoa(struct.pack("!I", int(value)))


def subgroup_engine(parent: Engine, ranks: Sequence[int], label: str, master_addr: str = "",
                    **policy: Any) -> Optional[Engine]:
    """An engine for `ranks` (global ranks of `parent`) on its members, None on the other ranks. Collective: every
    rank of `parent` calls it with the same ranks and label, in the same order as its other collectives."""
    import array

    info = parent.info()
    me, size = int(info["rank"]), int(info["size"])
    members = normalise_ranks(ranks, size)
    first = members[0]
    record = array.array("q", [int(info["node"]), 0, 0])
    if me == first:
        record[1] = _to_int(_reachable_address(master_addr))
        record[2] = _free_port()
    data, _ = parent.allgather("perseus.process_set.{}".format(label), record, dtype="int64", shape=(1, _RECORD))
    rows = array.array("q", bytes(data))
    table: Dict[int, List[int]] = {r: list(rows[r * _RECORD:(r + 1) * _RECORD]) for r in range(size)}
    if me not in members:
        return None
    nodes = sorted({table[r][0] for r in members})
    node_of = {r: nodes.index(table[r][0]) for r in members}
    same_node = [r for r in members if node_of[r] == node_of[me]]
    address, port = _to_address(table[first][1]), int(table[first][2])
    try:
        return Engine(members.index(me), len(members), same_node.index(me), len(same_node), node_of[me], address,
                      port, serve_store=(me == first), **policy)
    except EngineError as error:
        raise EngineError("process set {} (ranks {}): its engine could not rendezvous at {}:{}: {}".format(
            label, members, address, port, error)) from None
