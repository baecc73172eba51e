"""The worker's side of elastic perseusrun (perseus/run/elastic): join a generation, ask for host updates.

perseusrun's elastic driver gives every worker process PERSEUS_ELASTIC_DRIVER=HOST:PORT (its rendezvous
service) and PERSEUS_ELASTIC_WORKER (the worker's id, `host:slot`). A worker joins a generation with
rendezvous(): the driver answers once every member of the next generation has asked, with this worker's rank,
size, local and cross numbers and the generation's own engine store (each generation has a fresh store, so no
key of an earlier generation can reach a later one). rendezvous() writes the numbers into os.environ as
perseusrun does for a static job (RANK, WORLD_SIZE, ..., PERSEUS_STORE_ADDR, HOROVOD_*), so the engine and
perseus.launch.detect() read them unchanged. One JSON line per request and per answer, one connection each.
"""

import json
import os
import socket
import sys
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

DRIVER_VARIABLE = "PERSEUS_ELASTIC_DRIVER"
WORKER_VARIABLE = "PERSEUS_ELASTIC_WORKER"


class DriverGone(RuntimeError):
    """The elastic driver (perseusrun) cannot be reached: the job is over."""


@dataclass(frozen=True)
class Assignment:
    generation: int
    rank: int
    size: int
    local_rank: int
    local_size: int
    node: int  # index of this worker's host among the generation's hosts
    num_nodes: int
    store_host: str
    store_port: int
    updates: int  # the driver's host-update counter when this generation was planned
    env: Tuple[Tuple[str, str], ...]  # what perseusrun would give a static rank with these numbers


_current: Optional[Assignment] = None


def enabled() -> bool:
    """Whether this process was started by elastic perseusrun."""
    return bool(os.environ.get(DRIVER_VARIABLE, "").strip())


def current() -> Optional[Assignment]:
    """The generation this worker is in (None before its first rendezvous, or outside an elastic job)."""
    return _current


def _driver() -> Tuple[str, int]:
    raw = os.environ.get(DRIVER_VARIABLE, "").strip()
    host, _, port = raw.rpartition(":")
    if not host or not port.isdigit():
        raise RuntimeError("{}={!r} is not HOST:PORT; it is set by perseusrun in elastic mode, do not set it "
                           "by hand".format(DRIVER_VARIABLE, raw))
    return host, int(port)


def request(message: Dict[str, Any], timeout: Optional[float] = None) -> Dict[str, Any]:
    """One request to the driver and its answer (blocks up to `timeout` seconds; None: until it answers)."""
    host, port = _driver()
    try:
        with socket.create_connection((host, port), timeout=10) as conn:
            conn.settimeout(timeout)
            conn.sendall(json.dumps(message).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError as error:
        raise DriverGone("the elastic driver (perseusrun) at {}:{} cannot be reached: {}".format(host, port, error))
    if not data:
        raise DriverGone("the elastic driver (perseusrun) at {}:{} closed the connection".format(host, port))
    return json.loads(data.decode())


def rendezvous() -> Assignment:
    """Joins the next generation (blocks until the driver has formed it) and exports its numbers. A worker the
    driver no longer needs (its host left the job, or the job is over) exits here with the driver's reason."""
    global _current
    worker = os.environ.get(WORKER_VARIABLE, "")
    answer = request({"op": "join", "worker": worker, "last": _current.generation if _current else -1})
    if "stop" in answer:
        sys.stderr.write("perseus elastic: worker {} stops: {}\n".format(worker, answer["stop"]))
        sys.stderr.flush()
        sys.exit(int(answer.get("code", 0)))
    found = Assignment(generation=answer["generation"], rank=answer["rank"], size=answer["size"],
                       local_rank=answer["local_rank"], local_size=answer["local_size"], node=answer["node"],
                       num_nodes=answer["num_nodes"], store_host=answer["store_host"],
                       store_port=answer["store_port"], updates=answer["updates"],
                       env=tuple(sorted(answer["env"].items())))
    os.environ.update(dict(found.env))
    _current = found
    return found


def host_updates() -> Tuple[int, bool]:
    """(the driver's host-update counter, whether every update since this worker's generation only removed
    hosts). A counter above current().updates means the driver has planned a new generation."""
    answer = request({"op": "updates", "since": _current.updates if _current else 0}, timeout=30)
    return int(answer["counter"]), bool(answer["removed_only"])
