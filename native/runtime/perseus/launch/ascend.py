"""Huawei Ascend (HCCL) jobs: RANK_TABLE_FILE (rank table json), RANK_ID, RANK_SIZE, ASCEND_DEVICE_ID."""

import json
from typing import List, Optional, Sequence, Tuple

from .model import LaunchEnvironmentError, Reading
from .values import Vars, parse_int, visible_device_count

Server = Tuple[str, List[int]]  # (server_id, rank ids of its devices in table order)


def read_ascend(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    if not v.has("RANK_TABLE_FILE") and not v.has("RANK_ID", "RANK_SIZE"):
        return None
    r = Reading("ascend")
    if v.has("RANK_ID"):
        r.put("rank", v.int("RANK_ID"), v.src("RANK_ID"))
    if v.has("RANK_SIZE"):
        r.put("size", v.int("RANK_SIZE", minimum=1), v.src("RANK_SIZE"))
    if v.has("ASCEND_DEVICE_ID"):  # the logical device of this process on its server: the local rank
        r.put("local_rank", v.int("ASCEND_DEVICE_ID"), v.src("ASCEND_DEVICE_ID"))
    if v.has("RANK_TABLE_FILE"):
        _read_table(v, r)
    elif r.local_size is None:
        devices = visible_device_count(v.environ)
        if devices is not None:
            r.put("local_size", devices[0], devices[1])
    return r


def _read_table(v: Vars, r: Reading) -> None:
    path = v.text("RANK_TABLE_FILE")
    where = "RANK_TABLE_FILE={}".format(path)
    servers = load_rank_table(path)
    total = sum(len(ranks) for _, ranks in servers)
    if r.size is None:
        r.put("size", total, "{} ({} devices)".format(where, total))
    elif r.size != total:
        raise LaunchEnvironmentError("{} but {} lists {} devices".format(r.sources["size"], where, total))
    if r.rank is None:
        raise LaunchEnvironmentError("{} is set but RANK_ID is not: the platform sets RANK_ID for every device process".format(where))
    for index, (server_id, ranks) in enumerate(servers):
        if 0 in ranks:
            r.put("master_addr", server_id, "{} (server_id of rank 0)".format(where))
        if r.rank in ranks:
            position = ranks.index(r.rank)
            r.put("node_rank", index, "{} (server {} of {}: {})".format(where, index, len(servers), server_id))
            r.put("local_size", len(ranks), "{} ({} devices on {})".format(where, len(ranks), server_id))
            if r.local_rank is None:
                r.put("local_rank", position, "{} (device {} on {})".format(where, position, server_id))
            elif r.local_rank != position:
                raise LaunchEnvironmentError("{} but {} puts rank {} at device {} of {}".format(
                    r.sources["local_rank"], where, r.rank, position, server_id))
    if r.node_rank is None:
        raise LaunchEnvironmentError("{} but {} has no device with rank_id {}".format(r.sources["rank"], where, r.rank))


def load_rank_table(path: str) -> List[Server]:
    """Servers of a rank table: version 1.x `server_list` or the older `group_list/instance_list`."""
    where = "RANK_TABLE_FILE={}".format(path)
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    except OSError as exc:
        raise LaunchEnvironmentError("{}: cannot read the rank table ({})".format(where, exc.strerror)) from None
    except ValueError as exc:
        raise LaunchEnvironmentError("{}: not valid JSON ({})".format(where, exc)) from None
    try:
        if "server_list" in table:
            return [(str(s["server_id"]), [parse_int(str(d["rank_id"]), where) for d in s["device"]])
                    for s in table["server_list"]]
        if "group_list" in table:
            servers: List[Server] = []
            for instance in table["group_list"][0]["instance_list"]:
                server_id, rank = str(instance["server_id"]), parse_int(str(instance["rank_id"]), where)
                match = [s for s in servers if s[0] == server_id]
                if match:
                    match[0][1].append(rank)
                else:
                    servers.append((server_id, [rank]))
            return servers
    except (KeyError, IndexError, TypeError) as exc:
        raise LaunchEnvironmentError("{}: malformed rank table (missing {})".format(where, exc)) from None
    raise LaunchEnvironmentError("{}: neither a server_list (version 1.x) nor a group_list rank table".format(where))
