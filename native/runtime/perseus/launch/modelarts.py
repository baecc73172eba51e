"""Huawei ModelArts (Volcano) PyTorch-GPU jobs: the appended `--init_method tcp://IP:PORT --rank R --world_size N`
(R and N count NODES) and the platform variables VC_TASK_INDEX / MA_TASK_INDEX, MA_NUM_HOSTS / VC_WORKER_NUM,
VC_WORKER_HOSTS, MA_NUM_GPUS, MA_VJ_NAME + MA_TASK_NAME.

ModelArts starts the boot command once per node; the per-process numbers are derived:
rank = node_rank x local_size + local_rank, size = nodes x local_size.
"""

from typing import Optional, Sequence, Tuple

from .model import LaunchEnvironmentError, Reading
from .values import Vars, argv_option, parse_int, parse_tcp_url, split_list, visible_device_count

TASK_INDEX_VARIABLES = ("VC_TASK_INDEX", "MA_TASK_INDEX", "VK_TASK_INDEX")
NODE_COUNT_VARIABLES = ("MA_NUM_HOSTS", "VC_WORKER_NUM")
MARKERS = TASK_INDEX_VARIABLES + NODE_COUNT_VARIABLES + ("VC_WORKER_HOSTS",)


def read_modelarts(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    init = argv_option(argv, "--init_method", "--init-method")
    if init is None and v.first(*MARKERS) is None:
        return None
    r = Reading("modelarts", process_level=False)
    if init is not None:
        addr, port = parse_tcp_url(init[0], "argv " + init[1])
        r.put("master_addr", addr, "argv " + init[1])
        r.put("master_port", port, "argv " + init[1])
    # --rank / --world_size are ModelArts' only when it appended --init_method with them.
    arg_rank = argv_option(argv, "--rank") if init is not None else None
    arg_nodes = argv_option(argv, "--world_size", "--world-size") if init is not None else None
    node_rank, node_rank_src = _agreeing(v, arg_rank, TASK_INDEX_VARIABLES, "node index", minimum=0)
    nodes, nodes_src = _agreeing(v, arg_nodes, NODE_COUNT_VARIABLES, "number of nodes", minimum=1)
    hosts = split_list(v.text("VC_WORKER_HOSTS")) if v.has("VC_WORKER_HOSTS") else []
    if nodes is None and hosts:
        nodes, nodes_src = len(hosts), "VC_WORKER_HOSTS ({} hosts)".format(len(hosts))
    if nodes is None:
        nodes, nodes_src = 1, "single node (no --world_size, MA_NUM_HOSTS or VC_WORKER_HOSTS)"
    if node_rank is None:
        node_rank, node_rank_src = 0, "node 0 (no --rank or VC_TASK_INDEX)"
    if node_rank >= nodes:
        raise LaunchEnvironmentError("node index {} ({}) is not below the number of nodes {} ({})".format(
            node_rank, node_rank_src, nodes, nodes_src))
    r.put("node_rank", node_rank, node_rank_src)

    if v.has("MA_NUM_GPUS") and v.int("MA_NUM_GPUS") > 0:
        r.put("local_size", v.int("MA_NUM_GPUS"), v.src("MA_NUM_GPUS"))
    else:
        devices = visible_device_count(v.environ)
        r.put("local_size", *(devices if devices else (1, "no MA_NUM_GPUS or device list: one process per node")))
    if v.has("LOCAL_RANK"):  # set by the boot command's own per-GPU spawner
        r.put("local_rank", v.int("LOCAL_RANK"), v.src("LOCAL_RANK"))
    else:
        r.put("local_rank", 0, "the node's boot process (no LOCAL_RANK set by a per-GPU spawner)")
    r.put("rank", node_rank * r.local_size + r.local_rank, "node {} x {} + local rank {}".format(node_rank, r.local_size, r.local_rank))
    r.put("size", nodes * r.local_size, "{} nodes ({}) x {} per node ({})".format(nodes, nodes_src, r.local_size, r.sources["local_size"]))

    if r.master_addr is None and hosts:
        r.put("master_addr", hosts[0], "first host of VC_WORKER_HOSTS")
    if r.master_addr is None and v.has("MA_VJ_NAME", "MA_TASK_NAME"):
        name, task = v.text("MA_VJ_NAME"), v.text("MA_TASK_NAME")
        r.put("master_addr", "{}-{}-0.{}".format(name, task, name), "worker 0 of MA_VJ_NAME={} MA_TASK_NAME={}".format(name, task))
    return r


def _agreeing(v: Vars, arg: Optional[Tuple[str, str]], names: Sequence[str], what: str, minimum: int) -> Tuple[Optional[int], str]:
    """The value the appended argument gives, checked against the platform variable that says the same."""
    value, source = None, ""
    if arg is not None:
        value, source = parse_int(arg[0], "argv " + arg[1], minimum), "argv " + arg[1]
    name = v.first(*names)
    if name is not None:
        env_value = v.int(name, minimum)
        if value is None:
            return env_value, v.src(name)
        if env_value != value:
            raise LaunchEnvironmentError("the {} disagrees: {} but {}".format(what, source, v.src(name)))
    return value, source
