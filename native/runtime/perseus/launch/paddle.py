"""PaddlePaddle (paddle.distributed.launch, fleet): PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM / PADDLE_NUM_TRAINERS, endpoints."""

from typing import List, Optional, Sequence

from .model import LaunchEnvironmentError, Reading
from .values import Vars, split_host_port, split_list, visible_device_count


def read_paddle(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    # paddle.distributed.launch sets PADDLE_TRAINERS_NUM = number of processes; the seed manual's
    # PADDLE_NUM_TRAINERS is the number of NODES (set by the user, passed on to every process).
    if not v.has("PADDLE_TRAINER_ID") or v.first("PADDLE_TRAINERS_NUM", "PADDLE_NUM_TRAINERS") is None:
        return None
    r = Reading("paddle")
    r.put("rank", v.int("PADDLE_TRAINER_ID"), v.src("PADDLE_TRAINER_ID"))
    if v.has("PADDLE_RANK_IN_NODE"):
        r.put("local_rank", v.int("PADDLE_RANK_IN_NODE"), v.src("PADDLE_RANK_IN_NODE"))
    endpoint_count = _read_endpoints(v, r) if v.has("PADDLE_TRAINER_ENDPOINTS") else None
    if v.has("PADDLE_TRAINERS_NUM"):
        r.put("size", v.int("PADDLE_TRAINERS_NUM", minimum=1), v.src("PADDLE_TRAINERS_NUM"))
    if v.has("PADDLE_NUM_TRAINERS"):
        _read_node_count(v, r)
    if endpoint_count is not None and endpoint_count != r.size:
        raise LaunchEnvironmentError(
            "PADDLE_TRAINER_ENDPOINTS lists {} endpoints but {} says the job has {} processes; "
            "the two must describe the same job".format(endpoint_count, r.sources["size"], r.size))
    return r


def _read_endpoints(v: Vars, r: Reading) -> int:
    """Master address and this process's place among the endpoints; returns how many there are."""
    endpoints = split_list(v.text("PADDLE_TRAINER_ENDPOINTS"))
    hosts = [split_host_port(e, "PADDLE_TRAINER_ENDPOINTS")[0] for e in endpoints]
    r.put("master_addr", hosts[0], "host of the first PADDLE_TRAINER_ENDPOINTS entry ({})".format(endpoints[0]))
    if not v.has("PADDLE_CURRENT_ENDPOINT"):
        return len(endpoints)
    current = v.text("PADDLE_CURRENT_ENDPOINT")
    if current not in endpoints:
        raise LaunchEnvironmentError("{} is not one of PADDLE_TRAINER_ENDPOINTS={}".format(v.src("PADDLE_CURRENT_ENDPOINT"), ",".join(endpoints)))
    if endpoints.index(current) != r.rank:
        raise LaunchEnvironmentError(
            "{} is entry {} of PADDLE_TRAINER_ENDPOINTS but {} says rank {}".format(
                v.src("PADDLE_CURRENT_ENDPOINT"), endpoints.index(current), r.sources["rank"], r.rank))
    host = split_host_port(current, "PADDLE_CURRENT_ENDPOINT")[0]
    on_host = [e for e, h in zip(endpoints, hosts) if h == host]
    distinct: List[str] = []
    for h in hosts:
        if h not in distinct:
            distinct.append(h)
    where = "PADDLE_TRAINER_ENDPOINTS ({} endpoint(s) on {})".format(len(on_host), host)
    r.put("local_size", len(on_host), where)
    r.put("node_rank", distinct.index(host), "position of {} among the hosts of PADDLE_TRAINER_ENDPOINTS".format(host))
    position = on_host.index(current)
    if r.local_rank is None:
        r.put("local_rank", position, "position of {} among the endpoints on {}".format(current, host))
    elif r.local_rank != position:
        raise LaunchEnvironmentError("{} but {} is endpoint {} on {}".format(
            r.sources["local_rank"], v.src("PADDLE_CURRENT_ENDPOINT"), position, host))
    return len(endpoints)


def _read_node_count(v: Vars, r: Reading) -> None:
    nodes = v.int("PADDLE_NUM_TRAINERS", minimum=1)
    if r.local_size is None and r.size is not None:
        if r.size % nodes:
            raise LaunchEnvironmentError(
                "{} processes cannot be spread evenly over {} nodes ({}, {}: PADDLE_NUM_TRAINERS counts nodes)".format(
                    r.size, nodes, r.sources["size"], v.src("PADDLE_NUM_TRAINERS")))
        r.put("local_size", r.size // nodes, "{} / {}".format(r.sources["size"], v.src("PADDLE_NUM_TRAINERS")))
        return
    if r.local_size is None:
        devices = visible_device_count(v.environ)
        if devices is not None:
            r.put("local_size", devices[0], devices[1])
        else:
            r.put("local_size", 1, "no device list: one process per node")
    derived = nodes * r.local_size
    if r.size is None:
        r.put("size", derived, "{} nodes x {} per node ({})".format(v.src("PADDLE_NUM_TRAINERS"), r.local_size, r.sources["local_size"]))
    elif r.size != derived:
        raise LaunchEnvironmentError(
            "{} but {} nodes x {} processes per node ({}) is {}: PADDLE_NUM_TRAINERS counts nodes".format(
                r.sources["size"], v.src("PADDLE_NUM_TRAINERS"), r.local_size, r.sources["local_size"], derived))
