"""Typed reads of launcher variables and arguments; every error names the variable and its value."""

import os
import re
from typing import List, Mapping, Optional, Sequence, Tuple

from .model import LaunchEnvironmentError

# Device lists that tell how many processes a node-level launcher runs per node, in this order.
DEVICE_LIST_VARIABLES = ("CUDA_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
NVIDIA_GPUS_DIR = "/proc/driver/nvidia/gpus"


class Vars:
    """The environment of this process, read with the name of each variable kept for messages."""

    def __init__(self, environ: Mapping[str, str]):
        self.environ = environ

    def has(self, *names: str) -> bool:
        return all(self.environ.get(n, "").strip() != "" for n in names)

    def first(self, *names: str) -> Optional[str]:
        """The first of `names` that is set to something non-empty."""
        for name in names:
            if self.has(name):
                return name
        return None

    def text(self, name: str) -> str:
        return self.environ[name].strip()

    def int(self, name: str, minimum: int = 0) -> int:
        return parse_int(self.text(name), "{}={!r}".format(name, self.environ[name]), minimum)

    def port(self, name: str) -> int:
        return parse_port(self.text(name), "{}={!r}".format(name, self.environ[name]))

    def src(self, name: str) -> str:
        return "{}={}".format(name, self.text(name))


def parse_int(raw: str, where: str, minimum: int = 0) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise LaunchEnvironmentError("{} is not an integer".format(where)) from None
    if value < minimum:
        raise LaunchEnvironmentError("{} must be >= {}".format(where, minimum))
    return value


def parse_port(raw: str, where: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise LaunchEnvironmentError("{} is not a port number (1-65535)".format(where)) from None
    if not 1 <= value <= 65535:
        raise LaunchEnvironmentError("{} is not a port number (1-65535)".format(where))
    return value


def _count_device_list(value: str) -> Optional[int]:
    """How many devices a *_VISIBLE_DEVICES value names; None when it names none or cannot be counted."""
    value = value.strip()
    if value.lower() in ("", "none", "void", "-1", "nodevfiles"):
        return None
    if value.lower() == "all":
        try:
            count = len(os.listdir(NVIDIA_GPUS_DIR))
        except OSError:
            return None
        return count or None
    count = 0
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        match = re.fullmatch(r"(\d+)-(\d+)", item)  # Ascend docker runtime ranges: "0-3"
        if match:
            low, high = int(match.group(1)), int(match.group(2))
            if high < low:
                return None
            count += high - low + 1
        else:
            count += 1
    return count or None


def visible_device_count(environ: Mapping[str, str]) -> Optional[Tuple[int, str]]:
    """(number of visible accelerators, "VARIABLE=value") from the first device list that names some."""
    for name in DEVICE_LIST_VARIABLES:
        if name in environ:
            count = _count_device_list(environ[name])
            if count is not None:
                return count, "{}={} ({} device{})".format(name, environ[name], count, "" if count == 1 else "s")
    return None


def argv_option(argv: Sequence[str], *names: str) -> Optional[Tuple[str, str]]:
    """(value, "--name value") of the first `--name value` or `--name=value` in argv."""
    for i, token in enumerate(argv):
        for name in names:
            if token == name:
                if i + 1 >= len(argv):
                    raise LaunchEnvironmentError("argument {} is not followed by a value".format(name))
                return argv[i + 1], "{} {}".format(name, argv[i + 1])
            if token.startswith(name + "="):
                value = token[len(name) + 1:]
                return value, token
    return None


def split_host_port(endpoint: str, where: str) -> Tuple[str, int]:
    """'10.0.0.1:6170' / '[fe80::1]:6170' -> (host, port)."""
    endpoint = endpoint.strip()
    match = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d+)", endpoint) or re.fullmatch(r"([^:\[\]]+):(\d+)", endpoint)
    if not match:
        raise LaunchEnvironmentError("{}: {!r} is not HOST:PORT".format(where, endpoint))
    return match.group(1), parse_port(match.group(2), where)


def parse_tcp_url(url: str, where: str) -> Tuple[str, int]:
    """'tcp://10.0.0.1:6666' -> ('10.0.0.1', 6666)."""
    url = url.strip().strip('"').strip("'")
    if not url.startswith("tcp://"):
        raise LaunchEnvironmentError("{}: {!r} is not a tcp://HOST:PORT address".format(where, url))
    return split_host_port(url[len("tcp://"):], where)


def split_list(value: str) -> List[str]:
    """'a, b,,c' -> ['a', 'b', 'c']; also strips the brackets of '[a,b]' (ModelArts host lists)."""
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    return [item.strip() for item in value.split(",") if item.strip()]


def first_slurm_host(nodelist: str) -> str:
    """The first host of a Slurm node list: 'gpu[003-004,9],cpu1' -> 'gpu003'."""
    depth, end = 0, len(nodelist)
    for i, char in enumerate(nodelist):
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            end = i
            break
    first = nodelist[:end].strip()
    match = re.fullmatch(r"([^\[]*)\[([^\]]+)\](.*)", first)
    if not match:
        return first
    prefix, ranges, suffix = match.groups()
    start = ranges.split(",")[0].split("-")[0]
    return prefix + start + suffix


def slurm_tasks_on_node(tasks_per_node: str, node_id: int) -> Optional[int]:
    """Tasks on node `node_id` from SLURM_TASKS_PER_NODE syntax: '2(x3),1' -> [2, 2, 2, 1]."""
    counts: List[int] = []
    for item in tasks_per_node.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", item)
        if not match:
            return None
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts[node_id] if 0 <= node_id < len(counts) else None
