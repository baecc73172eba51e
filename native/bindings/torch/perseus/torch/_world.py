"""The process groups perseus communicates on, built from its own rendezvous.

Perseus does not reuse the user's process groups for gradients: it opens a rendezvous store on
MASTER_ADDR:PERSEUS_MASTER_PORT (the seed's "second rendezvous beside torch's, same address, another
port") and builds, per communication stream, a group of all ranks plus the two-level groups (one per
node, one of the node leaders). The transport is always a torch.distributed backend of the same kind
as the default group's (Gloo, NCCL, or a registered plugin); perseus never moves bytes itself.

Node split: the launch environment (perseus.launch.detect()) says which node each rank is on; when
no launcher is detected, ranks with the same host name share a node.
"""

import os
import socket
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from perseus import config as perseus_config
from perseus import launch
from perseus.torch import _exit

# AllgatherOptions: re-exported by torch.distributed up to 1.7, only in torch._C._distributed_c10d from 1.8 on
AllgatherOptions = getattr(dist, "AllgatherOptions", None) or torch._C._distributed_c10d.AllgatherOptions


class PerseusWorldError(RuntimeError):
    """The perseus process groups cannot be built (the message names the setting to change)."""


@dataclass(frozen=True)
class Topology:
    """Which node every rank of the job is on."""

    rank: int
    node_of: Tuple[int, ...]  # node index of each rank, nodes numbered by their lowest rank

    @property
    def size(self) -> int:
        return len(self.node_of)

    @property
    def num_nodes(self) -> int:
        return len(set(self.node_of))

    @property
    def node(self) -> int:
        return self.node_of[self.rank]

    def node_members(self, node: int) -> List[int]:
        return [r for r, n in enumerate(self.node_of) if n == node]

    @property
    def local_rank(self) -> int:
        return self.node_members(self.node).index(self.rank)

    @property
    def local_size(self) -> int:
        return len(self.node_members(self.node))

    @property
    def leaders(self) -> List[int]:
        return [self.node_members(n)[0] for n in range(self.num_nodes)]

    @property
    def is_leader(self) -> bool:
        return self.rank in self.leaders

    @property
    def uniform(self) -> bool:
        return len({len(self.node_members(n)) for n in range(self.num_nodes)}) == 1


def number_nodes(keys: Sequence[str]) -> Tuple[int, ...]:
    """Node index per rank from each rank's node key, nodes numbered in order of their lowest rank."""
    order: Dict[str, int] = {}
    for key in keys:
        order.setdefault(key, len(order))
    return tuple(order[key] for key in keys)


def node_key(env: launch.LaunchEnv, world_size: int) -> str:
    if env.launcher != "single" and env.size == world_size:
        return "node-{}".format(env.node_rank)
    return "host-{}".format(socket.gethostname())


BackendFactory = Callable[[dist.Store, int, int], object]

ORDERED_GLOO_THREADS = 1


def _gloo_factory(cfg: perseus_config.PerseusConfig, timeout: timedelta, ordered: bool = False) -> BackendFactory:
    """Gloo groups; `ordered`: for groups whose collectives every rank issues in one order (the streams')."""
    interfaces = perseus_config.network_interfaces()
    pinned = cfg.gloo_network_interface if cfg.gloo_network_interface in interfaces else None

    def create(store: dist.Store, rank: int, size: int) -> object:
        # One thread: a stream's group runs its collectives in the order the engine issues them, each alone
        # on the link, so the first finishes (and is completed while the next one travels) as early as it
        # can; a second thread would run the next one beside it and delay both to the end of the pair.
        threads = ORDERED_GLOO_THREADS if ordered else None
        if not hasattr(dist.ProcessGroupGloo, "create_device"):  # torch < 1.3: torch's own default device
            return dist.ProcessGroupGloo(store, rank, size, timeout=timeout)
        device = (dist.ProcessGroupGloo.create_device(interface=pinned) if pinned is not None
                  else _default_gloo_device())  # the default interface is absent here: this host's name, as torch
        return dist.ProcessGroupGloo(store, rank, size, _gloo_options(timeout, device, threads))

    return create


def _gloo_options(timeout: timedelta, device: object, threads: Optional[int]) -> object:
    """ProcessGroupGloo options: `_Options` with underscored fields from torch 1.9 on, `Options` before."""
    gloo = dist.ProcessGroupGloo
    new = hasattr(gloo, "_Options")
    options = gloo._Options() if new else gloo.Options()
    prefix = "_" if new else ""
    setattr(options, prefix + "timeout", timeout)
    setattr(options, prefix + "devices", [device])
    if threads is not None and hasattr(options, prefix + "threads"):
        setattr(options, prefix + "threads", threads)
    return options


def _default_gloo_device() -> object:
    gloo = dist.ProcessGroupGloo
    if hasattr(gloo, "create_default_device"):
        return gloo.create_default_device()
    try:  # torch < 1.9: what its C++ default does, the host name if it resolves, else the loopback
        socket.gethostbyname(socket.gethostname())
        return gloo.create_device(hostname=socket.gethostname())
    except OSError:
        return gloo.create_device(hostname="127.0.0.1")


def _nccl_factory(cfg: perseus_config.PerseusConfig, timeout: timedelta) -> BackendFactory:
    if cfg.nccl_network_interface in perseus_config.network_interfaces():
        os.environ.setdefault("NCCL_SOCKET_IFNAME", cfg.nccl_network_interface)

    def create(store: dist.Store, rank: int, size: int) -> object:
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = timeout
        return dist.ProcessGroupNCCL(store, rank, size, options)

    return create


def _plugin_factory(name: str, timeout: timedelta) -> BackendFactory:
    plugin = dist.Backend._plugins[name.upper()]
    if plugin.extended_api:
        raise PerseusWorldError(
            "perseus cannot build groups of the backend plugin {!r}: it is registered with extended_api=True; "
            "register it with the (store, rank, size, timeout) creator".format(name)
        )

    def create(store: dist.Store, rank: int, size: int) -> object:
        return plugin.creator_fn(store, rank, size, timeout)

    return create


def device_backends(backend_string: str) -> Dict[str, str]:
    """'gloo' -> {'cpu': 'gloo'}; 'cpu:gloo,cuda:nccl' -> both; a plugin serves cpu (and cuda)."""
    backend_string = str(backend_string)
    if ":" in backend_string:
        pairs = [item.split(":", 1) for item in backend_string.split(",")]
        return {device.strip(): name.strip() for device, name in pairs}
    if backend_string == "nccl":
        return {"cuda": "nccl"}
    if backend_string == "gloo":
        return {"cpu": "gloo", "cuda": "gloo"}
    return {"cpu": backend_string, "cuda": backend_string}


class Group:
    """Some ranks of the perseus world; one torch.distributed backend per device type, built on first use.

    Every member uses a group in the same order of operations, so the lazy construction (itself a
    rendezvous of the members) happens at the same point on all of them.
    """

    def __init__(self, name: str, members: Sequence[int], rank: int, store: dist.Store,
                 factories: Dict[str, BackendFactory]) -> None:
        self.name = name
        self.members = list(members)
        self.group_rank = self.members.index(rank)
        self._store = store
        self._factories = factories
        self._backends: Dict[str, object] = {}
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        return len(self.members)

    def backend(self, device_type: str) -> object:
        with self._lock:
            found = self._backends.get(device_type)
            if found is None:
                factory = self._factories.get(device_type)
                if factory is None:
                    raise PerseusWorldError(
                        "no {} backend in this job's process group (backends: {}); initialise torch.distributed "
                        "with one that serves {} tensors".format(device_type, sorted(self._factories), device_type)
                    )
                store = dist.PrefixStore("{}/{}".format(self.name, device_type), self._store)
                found = factory(store, self.group_rank, self.size)
                self._backends[device_type] = found
            return found

    def release(self) -> None:
        with self._lock:
            self._backends.clear()

    def for_tensor(self, tensor: torch.Tensor) -> object:
        return self.backend(tensor.device.type)

    # Collectives: each returns the backend's Work; the caller waits.
    def allreduce(self, tensor: torch.Tensor, op: dist.ReduceOp = dist.ReduceOp.SUM) -> object:
        opts = dist.AllreduceOptions()
        opts.reduceOp = op
        return self.for_tensor(tensor).allreduce([tensor], opts)

    def reduce(self, tensor: torch.Tensor, root: int, op: dist.ReduceOp = dist.ReduceOp.SUM) -> object:
        opts = dist.ReduceOptions()
        opts.reduceOp = op
        opts.rootRank = self.members.index(root)
        opts.rootTensor = 0
        return self.for_tensor(tensor).reduce([tensor], opts)

    def broadcast(self, tensor: torch.Tensor, root: int) -> object:
        opts = dist.BroadcastOptions()
        opts.rootRank = self.members.index(root)
        opts.rootTensor = 0
        return self.for_tensor(tensor).broadcast([tensor], opts)

    def allgather(self, outputs: List[torch.Tensor], tensor: torch.Tensor) -> object:
        return self.for_tensor(tensor).allgather([outputs], [tensor], AllgatherOptions())

    def barrier(self) -> None:
        flag = torch.zeros(1)
        self.allreduce(flag).wait()


@dataclass
class StreamGroups:
    """The groups one communication stream uses: all ranks, its node, and (on leaders) the leaders."""

    everyone: Group
    node: Optional[Group]
    leaders: Optional[Group]


class PerseusWorld:
    """Process groups of one job: a control group (metadata, Horovod API ops) and per-stream groups."""

    def __init__(self, topology: Topology, store: dist.Store, factories: Dict[str, BackendFactory],
                 streams: int, generation: int, two_levels: bool,
                 stream_factories: Optional[Dict[str, BackendFactory]] = None) -> None:
        self.topology = topology
        self.store = store
        self.generation = generation
        everyone = list(range(topology.size))
        prefix = "perseus/gen{}".format(generation)
        self.control = Group(prefix + "/control", everyone, topology.rank, store, factories)
        self.streams: List[StreamGroups] = []
        node_members = topology.node_members(topology.node)
        ordered = factories if stream_factories is None else stream_factories  # only the engine uses the streams
        for s in range(streams):
            base = "{}/stream{}".format(prefix, s)
            node = leaders = None
            if two_levels:
                node = Group("{}/node{}".format(base, topology.node), node_members, topology.rank, store, ordered)
                if topology.is_leader:
                    leaders = Group(base + "/leaders", topology.leaders, topology.rank, store, ordered)
            self.streams.append(StreamGroups(Group(base + "/all", everyone, topology.rank, store, ordered),
                                             node, leaders))
        # Build the backends now, in one thread and one order on every rank: the stream workers would
        # otherwise build them concurrently, and concurrent rendezvous on one store connection can deadlock.
        for device in eager_devices(factories):
            for group in self.groups():
                group.backend(device)

    def groups(self) -> List[Group]:
        found = [self.control]
        for stream in self.streams:
            found += [g for g in (stream.everyone, stream.node, stream.leaders) if g is not None]
        return found

    @property
    def rank(self) -> int:
        return self.topology.rank

    @property
    def size(self) -> int:
        return self.topology.size


def eager_devices(factories: Dict[str, BackendFactory]) -> List[str]:
    devices = ["cpu"] if "cpu" in factories else []
    if "cuda" in factories and torch.cuda.is_available() and factories["cuda"] is not factories.get("cpu"):
        devices.append("cuda")
    return devices


_lock = threading.Lock()
_store: Optional[dist.Store] = None
_store_key: Optional[Tuple[str, str, int]] = None
_world: Optional[PerseusWorld] = None
_world_owner: Optional[object] = None  # the default process group the world was built for
_generation = 0


def _timeout(cfg: perseus_config.PerseusConfig) -> timedelta:
    return timedelta(seconds=cfg.gloo_timeout_seconds)


def master_address(env: launch.LaunchEnv) -> Optional[str]:
    return env.master_addr or os.environ.get("MASTER_ADDR") or None


def torch_master_port(env: launch.LaunchEnv) -> Optional[int]:
    if env.master_port is not None:
        return env.master_port
    raw = os.environ.get("MASTER_PORT", "").strip()
    return int(raw) if raw.isdigit() else None


def check_ports(cfg: perseus_config.PerseusConfig, env: launch.LaunchEnv) -> None:
    torch_port = torch_master_port(env)
    if torch_port is not None and torch_port == cfg.master_port and cfg.is_set("PERSEUS_MASTER_PORT"):
        raise perseus_config.ConfigError(
            "PERSEUS_MASTER_PORT={} is the same port as MASTER_PORT={} (torch's rendezvous): perseus opens its own "
            "rendezvous on MASTER_ADDR and needs another port; set PERSEUS_MASTER_PORT to a free port other than "
            "{}, or unset it so that perseus joins torch's rendezvous".format(cfg.master_port, torch_port, torch_port)
        )


@dataclass(frozen=True)
class StorePlan:
    """Where this process's perseus rendezvous lives: `serve` a TCPStore of its own on address:port, join
    the TCPStore server of torch's default group there, or (`shared`) use torch's default store itself."""

    how: str  # "serve", "join" or "shared"
    address: Optional[str] = None
    port: Optional[int] = None


def default_store_address() -> Optional[Tuple[str, int]]:
    """host:port of the TCPStore server behind torch's default process group, where this torch tells it."""
    store = dist.distributed_c10d._get_default_store()
    for _ in range(8):  # PrefixStore layers (default_pg/, torchrun's agent prefixes)
        inner = getattr(store, "underlying_store", None)
        if inner is None:
            break
        store = inner
    if isinstance(store, dist.TCPStore) and hasattr(store, "host") and hasattr(store, "port"):
        return str(store.host), int(store.port)
    return None


def plan_store(cfg: perseus_config.PerseusConfig, env: launch.LaunchEnv, initialised: bool) -> StorePlan:
    """PERSEUS_MASTER_PORT set: perseus's own store there (the seed's meaning). Unset: no port of perseus's own
    once torch.distributed is up (it joins torch's store server); before that (hvd.init with
    PERSEUS_USE_DDP_LAUNCHER=0 builds the default group on perseus's store) MASTER_PORT, else the default."""
    address = master_address(env)
    if cfg.is_set("PERSEUS_MASTER_PORT") or not initialised:
        if address is None:
            if initialised:
                perseus_config.warn_not_honoured(
                    "PERSEUS_MASTER_PORT",
                    "MASTER_ADDR is not set, so perseus has no address for its own rendezvous and shares the store "
                    "of torch's default process group instead", cfg)
                return StorePlan("shared")
            raise PerseusWorldError(
                "perseus needs MASTER_ADDR (the address of rank 0) for its rendezvous: start the job with torchrun / "
                "torch.distributed.launch or perseusrun, or export MASTER_ADDR and MASTER_PORT")
        check_ports(cfg, env)
        port = cfg.master_port
        if not cfg.is_set("PERSEUS_MASTER_PORT") and torch_master_port(env) is not None:
            port = torch_master_port(env)  # torch does not use it: its default group is built on this store
        return StorePlan("serve", address, port)
    found = default_store_address()
    if found is None and address is not None and torch_master_port(env) is not None:
        found = (address, int(torch_master_port(env)))  # type: ignore[arg-type]
    if found is None:
        return StorePlan("shared")
    return StorePlan("join", found[0], found[1])


class LegacyTCPStore(Exception):
    """This torch's TCPStore takes no timeout (torch < 1.5)."""


def _tcp_store(address: str, port: int, size: int, serve: bool, timeout: timedelta,
               legacy_ok: bool = True) -> dist.Store:
    """A TCPStore server or client with the arguments this torch accepts (wait_for_workers arrived in 1.9,
    the timeout in 1.5); LegacyTCPStore where only the oldest form exists and `legacy_ok` is False."""
    try:
        return dist.TCPStore(address, port, size, serve, timeout, wait_for_workers=False)
    except TypeError:
        pass
    try:
        return dist.TCPStore(address, port, size, serve, timeout)
    except TypeError:
        if not legacy_ok:
            raise LegacyTCPStore() from None
    return dist.TCPStore(address, port, size, serve)


def rendezvous_store(rank: int, size: int, cfg: Optional[perseus_config.PerseusConfig] = None,
                     env: Optional[launch.LaunchEnv] = None) -> dist.Store:
    """The perseus rendezvous of this process (one per process and place; see plan_store)."""
    global _store, _store_key
    cfg = perseus_config.get() if cfg is None else cfg
    env = launch.detect() if env is None else env
    if size == 1:
        return dist.HashStore()
    plan = plan_store(cfg, env, dist.is_available() and dist.is_initialized())
    if plan.how == "shared":
        return dist.PrefixStore("perseus", dist.distributed_c10d._get_default_store())
    assert plan.address is not None and plan.port is not None
    key = (plan.how, plan.address, plan.port)
    if _store is not None and _store_key in (key, ("serve", plan.address, plan.port)):
        return _store  # a store perseus serves already (hvd.init built torch's default group on it)
    serve = plan.how == "serve" and rank == 0
    try:
        # "join": a client connection of its own, never the default group's: rendezvous running
        # concurrently on one connection can deadlock.
        store = _tcp_store(plan.address, plan.port, size, serve, _timeout(cfg), legacy_ok=plan.how != "join")
    except LegacyTCPStore:
        # torch < 1.5: its store server crashed when a client joined after the rendezvous (seen on 1.2); perseus
        # builds its groups in one thread, so sharing the default group's connection is safe there
        return dist.PrefixStore("perseus", dist.distributed_c10d._get_default_store())
    except (RuntimeError, OSError) as error:
        what = ("join torch's rendezvous on {}:{} (MASTER_ADDR:MASTER_PORT)" if plan.how == "join"
                else "open its rendezvous on {}:{}").format(plan.address, plan.port)
        fix = ("set PERSEUS_MASTER_PORT to a free port to give perseus a rendezvous of its own" if plan.how == "join"
               else "choose a free port with PERSEUS_MASTER_PORT")
        raise PerseusWorldError("perseus cannot {}: {}; {}".format(what, error, fix)) from None
    _store = dist.PrefixStore("perseus", store) if plan.how == "join" else store
    _store_key = key
    return _store


def _exchange_node_keys(store: dist.Store, rank: int, size: int, key: str, generation: int) -> List[str]:
    prefix = "perseus/gen{}/node-key/".format(generation)
    store.set(prefix + str(rank), key)
    return [store.get(prefix + str(r)).decode() for r in range(size)]


def _factories(cfg: perseus_config.PerseusConfig, ordered: bool = False) -> Dict[str, BackendFactory]:
    timeout = _timeout(cfg)
    factories: Dict[str, BackendFactory] = {}
    backend = dist.get_backend() if dist.is_initialized() else "gloo"
    for device, name in device_backends(str(backend)).items():
        if name == "gloo":
            factories[device] = _gloo_factory(cfg, timeout, ordered)
        elif name == "nccl":
            factories[device] = _nccl_factory(cfg, timeout)
        elif name.upper() in dist.Backend._plugins:
            factories[device] = _plugin_factory(name, timeout)
        else:
            raise PerseusWorldError("perseus cannot build groups of the backend {!r}".format(name))
    return factories


def report_unhonoured(cfg: perseus_config.PerseusConfig) -> None:
    """Warn (once each) about variables set for this job that this build cannot honour, and why."""
    backends = sorted(set(device_backends(str(dist.get_backend())).values())) if dist.is_initialized() else []
    if cfg.nccl_enable:
        perseus_config.warn_not_honoured(
            "PERSEUS_NCCL_ENABLE",
            "the hybrid RDMA+VPC NCCL link is a feature of a special perseus build (the seed: ask for it by ticket); "
            "this build communicates on the job's own backends ({})".format(", ".join(backends) or "none yet"), cfg)
    if "nccl" not in backends:
        perseus_config.warn_not_honoured(
            "PERSEUS_NCCL_NETWORK_INTERFACE",
            "this job has no NCCL communicator (backends: {}); the Gloo interface is "
            "PERSEUS_GLOO_NETWORK_INTERFACE".format(", ".join(backends) or "none yet"), cfg)
    perseus_config.warn_not_honoured(
        "PERSEUS_OFFLINE_NEG",
        "perseus computes one fusion plan per model from its parameter list when the model is wrapped, the same on "
        "every rank, so there is no per-step gradient negotiation to move offline; the value changes nothing", cfg)


def world(cfg: Optional[perseus_config.PerseusConfig] = None) -> PerseusWorld:
    """The perseus world of the current default process group (built on first use, by all ranks together)."""
    global _world, _world_owner, _generation
    if not dist.is_initialized():
        raise PerseusWorldError("torch.distributed is not initialised: call hvd.init() or dist.init_process_group() first")
    cfg = perseus_config.get() if cfg is None else cfg
    owner = dist.distributed_c10d._get_default_group()
    with _lock:
        if _world is not None and _world_owner is owner:
            return _world
        rank, size = dist.get_rank(), dist.get_world_size()
        env = launch.detect()
        store = rendezvous_store(rank, size, cfg, env)
        _generation += 1
        keys = _exchange_node_keys(store, rank, size, node_key(env, size), _generation)
        topology = Topology(rank, number_nodes(keys))
        two_levels = cfg.hierarchical(topology.num_nodes, topology.local_size)
        _world = PerseusWorld(topology, store, _factories(cfg), cfg.streams, _generation, two_levels,
                              _factories(cfg, ordered=True))
        _world_owner = owner
        _exit.register()
        return _world


def current() -> Optional[PerseusWorld]:
    """The world built for the current default process group, if any."""
    if _world is not None and dist.is_initialized() and _world_owner is dist.distributed_c10d._get_default_group():
        return _world
    return None


def forget() -> None:
    """Drop the world (after the default process group was destroyed)."""
    global _world, _world_owner
    with _lock:
        _world = None
        _world_owner = None


def release() -> None:
    """Tear down what perseus created (its backends, its store connection) while the interpreter still runs:
    left to interpreter teardown, a Gloo group can be destroyed with its threads still joinable (abort)."""
    global _world, _world_owner, _store, _store_key
    with _lock:
        if _world is not None:
            for group in _world.groups():
                group.release()
        _world = None
        _world_owner = None
        _store = None
        _store_key = None
