"""perseus.torch on the native engine: the process's engine, torch tensors as engine buffers, completions.

Every collective of perseus.torch (the DDP hook, hvd.DistributedOptimizer, the Horovod API) runs on the
framework-neutral engine (native/engine, C ABI perseus/engine.h) through perseus.engine's ctypes handle.
The binding carries the engine statically in its own module, _perseus_engine.so (no torch code in it);
perseus.engine._library.use_library() points the handle at it.

The engine is made on first use:
  - torch.distributed initialised (DDP, or hvd.init() under a torch launcher): the ranks' numbers are
    torch's; the engine's store is at MASTER_ADDR:PERSEUS_MASTER_PORT when that is set, else at a free
    port rank 0 picks and publishes through torch's default store (no fixed port, no second launcher);
  - otherwise (hvd.init() with PERSEUS_USE_DDP_LAUNCHER=0, or a plain mpirun): the launcher's numbers, the
    store at MASTER_ADDR:PERSEUS_MASTER_PORT (else MASTER_PORT); under a plain mpirun with no MASTER_ADDR
    the address and port are agreed through MPI.
Under perseusrun (PERSEUS_STORE_ADDR set) the process's first engine joins the store perseusrun serves and no
rank serves one, either way; a later engine rendezvous as above (the engine's store keys are not per engine).
The wire policy (PERSEUS_ALLREDUCE_DTYPE/_MODE/_GRADIENT_SCALE/_STREAMS/_FUSION/_NANCHECK, ...) is the
engine's, read from the environment when it is made. A model wrapped later under other values, with
torch.distributed up, gets a new engine on a new port (every rank wraps its models in the same order).
"""

import ctypes
import os
import queue
import socket
import threading
import zlib
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from perseus import config as perseus_config
from perseus import engine as native
from perseus import launch
from perseus.engine import _buffers, _library
from perseus.torch import _device, _exit

LIBRARY_FILE = "_perseus_engine.so"

_DTYPES = {torch.float32: native.FLOAT32, torch.float16: native.FLOAT16, torch.bfloat16: native.BFLOAT16,
           torch.float64: native.FLOAT64, torch.int32: native.INT32, torch.int64: native.INT64,
           torch.uint8: native.UINT8}


class PerseusWorldError(RuntimeError):
    """The perseus engine cannot be made (the message names the setting to change)."""


def _library_path() -> Optional[str]:
    import perseus.torch as package
    for directory in package.__path__:
        path = os.path.join(directory, LIBRARY_FILE)
        if os.path.isfile(path):
            return path
    return None


def load_library() -> ctypes.CDLL:
    path = _library_path()
    if path is None and not os.environ.get(_library.LIBRARY_ENV):
        raise PerseusWorldError("perseus_torch is damaged: {} is missing beside perseus/torch; reinstall the "
                                "perseus_torch wheel".format(LIBRARY_FILE))
    if path is not None:
        _library.use_library(path)
    return _library.load()


def environment_policy() -> Dict[str, Any]:
    """The engine options the environment asks for now, by field (a bad value raises, naming the variable)."""
    return native.Options.from_env(load_library()).policy()


# ---- torch tensors as engine buffers ---------------------------------------------------------------

def engine_dtype(dtype: torch.dtype) -> Optional[int]:
    return _DTYPES.get(dtype)


def buffer_of(tensor: torch.Tensor) -> _buffers.Buffer:
    """A contiguous host tensor's memory, described for the engine (no copy; the tensor stays referenced)."""
    code = _DTYPES.get(tensor.dtype)
    if code is None:
        raise TypeError("perseus: the engine has no {} (it takes {})".format(
            tensor.dtype, ", ".join(str(d).replace("torch.", "") for d in _DTYPES)))
    if tensor.is_cuda or not tensor.is_contiguous():
        raise ValueError("perseus: the engine takes contiguous host tensors (stage CUDA tensors through the host)")
    shape = tuple(tensor.shape) if tensor.dim() > 0 else (1,)
    return _buffers.raw(tensor.data_ptr() if tensor.numel() else 0, code, shape, tensor)


class Staged:
    """A host tensor the engine can use in place for `tensor`: the tensor itself when it is a contiguous
    CPU tensor, else a contiguous host copy, copied back by finish(). CUDA tensors take the engine's device
    path instead (_device, World.allreduce_any); only what the device path lacks (gossip downsampling,
    allgather) stages them here."""

    def __init__(self, tensor: torch.Tensor, copy_in: bool = True) -> None:
        self.tensor = tensor
        self.direct = not tensor.is_cuda and tensor.is_contiguous()
        if self.direct:
            self.host = tensor
        elif copy_in:
            self.host = tensor.detach().to("cpu", copy=True).contiguous()
        else:
            self.host = torch.empty(tensor.shape, dtype=tensor.dtype)

    def finish(self) -> torch.Tensor:
        if not self.direct:
            self.tensor.copy_(self.host.view(self.tensor.shape))
        return self.tensor


# ---- completions off the training thread -------------------------------------------------------------

Callback = Callable[[Optional[BaseException]], None]


class Completions:
    """One thread that waits for engine handles (in C, the GIL released) in the order they were handed in
    and runs each one's callback: DDP's futures complete with no polling on the training thread."""

    def __init__(self) -> None:
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def add(self, handle: native.Handle, callback: Callback) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="perseus-completions", daemon=True)
                self._thread.start()
        self._queue.put((handle, callback))

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            handle, callback = item
            error: Optional[BaseException] = None
            try:
                handle.wait()
            except BaseException as caught:  # handed to the callback, which hands it to the future
                error = caught
            try:
                callback(error)
            except BaseException:  # a callback must not end the thread that serves every other one
                pass

    def stop(self, timeout: float = 10.0) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)


# ---- the process's engine ---------------------------------------------------------------------------

class World:
    """The engine of this process and who this rank is (the Horovod queries read it)."""

    def __init__(self, eng: native.Engine, policy: Dict[str, Any], generation: int,
                 store: Tuple[str, str, int] = ("", "", 0)) -> None:
        self.engine = eng
        self.store = store  # how its rendezvous port was chosen, the address, the port
        self.policy = policy
        self.generation = generation
        info = eng.info()
        self.rank, self.size = info["rank"], info["size"]
        self.local_rank, self.local_size = info["local_rank"], info["local_size"]
        self.node, self.num_nodes = info["node"], info["num_nodes"]
        self.hierarchical = bool(info["hierarchical"])
        self.intra_fp16, self.inter_fp16 = bool(info["intra_fp16"]), bool(info["inter_fp16"])
        self.completions = Completions()
        self.feeder = _device.Feeder()
        self._counters: Dict[str, int] = {}
        self._lock = threading.Lock()

    def describe_policy(self) -> str:
        def dt(fp16: bool) -> str:
            return "fp16" if fp16 else "fp32"
        if self.hierarchical:
            return "two levels: {} inside nodes, {} between nodes".format(dt(self.intra_fp16), dt(self.inter_fp16))
        return "one level: {}".format(dt(self.intra_fp16 and self.inter_fp16))

    def next_name(self, kind: str) -> str:
        """A name every rank gives its n-th call of `kind` (calls of one kind come in one order on every rank)."""
        with self._lock:
            n = self._counters.get(kind, 0)
            self._counters[kind] = n + 1
        return "{}.{}".format(kind, n)

    def wire(self, level: str = "all") -> Dict[str, Tuple[int, int]]:
        """{dtype name: (bytes, collectives)} this rank handed to the transport on `level`, non-zero only."""
        out = {}
        for name, code in _buffers.DTYPE_NAMES.items():
            found = self.engine.wire_bytes(level, code)
            if found[1]:
                out[name] = found
        return out

    def allreduce_any(self, name: str, tensor: torch.Tensor, op: str) -> Any:
        """An in-place allreduce of a contiguous tensor, host or CUDA (the device path): a handle (wait(), poll())."""
        if tensor.is_cuda:
            return _device.allreduce(self.engine, self.feeder, name, tensor, op)
        return self.engine.allreduce_async(name, buffer_of(tensor), op=op)

    def close(self) -> None:
        self.feeder.stop()
        self.completions.stop()
        try:
            self.engine.close()
        except native.EngineError:
            pass  # a peer already gone at exit: nothing left to tell it


_lock = threading.RLock()
_world: Optional[World] = None
_generation = 0
# The port the next engine's store is served on, agreed by every rank over the engine that is shutting down
# (agree_next_ports): a rank that starts the next engine first cannot reach the old store, which rank 0 may
# still be closing, and the old store's keys cannot mislead the new engine.
_next_engine_port: Optional[int] = None


_scope = threading.local()  # a process set's world while one of its collectives is being issued


def current() -> Optional[World]:
    """The world collectives run on: a process set's inside using(), else the job's."""
    scoped = getattr(_scope, "world", None)
    return scoped if scoped is not None else _world


def job() -> Optional[World]:
    """The job's world (every rank), whatever process set is in use."""
    return _world


class using:
    """`with _comm.using(world):` the collectives this thread issues run on `world` (a process set's)."""

    def __init__(self, world: Optional[World]) -> None:
        self.world = world
        self.previous: Optional[World] = None

    def __enter__(self) -> Optional[World]:
        self.previous = getattr(_scope, "world", None)
        _scope.world = self.world
        return self.world

    def __exit__(self, *exc: Any) -> None:
        _scope.world = self.previous


def _torch_dist() -> Any:
    import torch.distributed as dist
    return dist if dist.is_available() and dist.is_initialized() else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def _served_store(generation: int, size: int, launcher_size: int) -> Optional[Tuple[str, int]]:
    """The store perseusrun serves for this job (PERSEUS_STORE_ADDR=HOST:PORT, already checked by the engine's
    options), for the process's first engine of a world that is the launcher's."""
    served = os.environ.get("PERSEUS_STORE_ADDR", "").strip()
    if not served or generation != 0 or size < 2 or size != launcher_size:
        return None
    host, _, port = served.rpartition(":")
    return host, int(port)


def _make(cfg: perseus_config.PerseusConfig, policy: Dict[str, Any],
          generation: int) -> Tuple[native.Engine, Tuple[str, str, int]]:
    """The engine and where its store is: (how the port was chosen, address, port)."""
    load_library()
    from perseus.horovod_kit import elastic_worker
    joined = elastic_worker.current()
    if joined is not None:  # elastic perseusrun: this generation's numbers and its own store, served by perseusrun
        if joined.size == 1:  # alone: the engine serves itself a store on a free port (it has no peer to meet)
            return native.Engine(0, 1, 0, 1, 0, "127.0.0.1", 0), ("elastic generation {}, alone".format(
                joined.generation), "127.0.0.1", 0)
        try:
            return (native.Engine(joined.rank, joined.size, joined.local_rank, joined.local_size, joined.node,
                                  joined.store_host, joined.store_port, serve_store=False),
                    ("elastic generation {}".format(joined.generation), joined.store_host, joined.store_port))
        except native.EngineError as error:
            raise PerseusWorldError("perseus cannot join generation {}'s store at {}:{}: {}".format(
                joined.generation, joined.store_host, joined.store_port, error)) from None
    dist = _torch_dist()
    env = launch.detect()
    address = env.master_addr or os.environ.get("MASTER_ADDR")
    served = _served_store(generation, dist.get_world_size() if dist else env.size, env.size)
    if served is not None:
        rank = dist.get_rank() if dist else env.rank
        try:
            return (native.Engine(rank, env.size, env.local_rank, env.local_size, env.node_rank, served[0], served[1],
                                  serve_store=False), ("perseusrun", served[0], served[1]))
        except native.EngineError as error:
            raise PerseusWorldError("perseus cannot join the rendezvous store perseusrun serves at {}:{}: {}".format(
                served[0], served[1], error)) from None
    if dist is None:
        if env.size > 1 and address is None and env.launcher in ("openmpi", "mpich"):
            try:  # a plain mpirun: MPI itself agrees rank 0's address and a free port
                return native.Engine.from_mpi(), ("mpi", "", 0)
            except native.EngineError as error:
                raise PerseusWorldError(str(error)) from None
        if env.size > 1 and address is None:
            raise PerseusWorldError(
                "perseus needs MASTER_ADDR (the address of rank 0) for its rendezvous in a {}-rank job started by "
                "'{}': export MASTER_ADDR and PERSEUS_MASTER_PORT, or start it with perseusrun or mpirun".format(
                    env.size, env.launcher))
        # torch.distributed is not up, so MASTER_PORT is free for perseus when PERSEUS_MASTER_PORT is not set
        torch_port = os.environ.get("MASTER_PORT", "").strip()
        how, port = "PERSEUS_MASTER_PORT", cfg.master_port
        if not cfg.is_set("PERSEUS_MASTER_PORT") and torch_port.isdigit():
            how, port = "MASTER_PORT", int(torch_port)
        global _next_engine_port
        if generation > 0 and _next_engine_port is not None:
            how, port, _next_engine_port = "agreed at the last shutdown", _next_engine_port, None
        try:
            return (native.Engine(env.rank, env.size, env.local_rank, env.local_size, env.node_rank,
                                  address or "127.0.0.1", port), (how, address or "127.0.0.1", port))
        except native.EngineError as error:
            raise PerseusWorldError("perseus cannot start its engine on {}:{}: {}; choose a free port with "
                                    "PERSEUS_MASTER_PORT".format(address, port, error)) from None
    rank, size = dist.get_rank(), dist.get_world_size()
    address = address or "127.0.0.1"
    how = "PERSEUS_MASTER_PORT"
    if generation == 0 and cfg.is_set("PERSEUS_MASTER_PORT"):
        port = cfg.master_port
    else:  # rank 0 picks a free port and tells the others through torch's own store
        how = "picked"
        store = dist.distributed_c10d._get_default_store()
        key = "perseus/engine/{}/port".format(generation)
        if rank == 0:
            store.set(key, str(_free_port()))
        port = int(store.get(key).decode())
    if env.size == size and env.launcher != "single":
        local_rank, local_size, node = env.local_rank, env.local_size, env.node_rank
    else:  # no launcher numbers for this world: ranks with the same host name share a node
        local_rank, local_size, node = 0, 1, zlib.crc32(socket.gethostname().encode()) & 0x3FFFFFFF
    try:
        return native.Engine(rank, size, local_rank, local_size, node, address, port), (how, address, port)
    except native.EngineError as error:
        raise PerseusWorldError("perseus cannot start its engine on {}:{}: {}; choose a free port with "
                                "PERSEUS_MASTER_PORT".format(address, port, error)) from None


def world(cfg: Optional[perseus_config.PerseusConfig] = None, renew: bool = False) -> World:
    """The engine of this process, made on first use (collective: every rank calls it at the same point).
    renew: a model is being wrapped; if the environment's engine policy changed since the engine was made
    and torch.distributed is up, every rank replaces it with one under the new policy."""
    global _world, _generation
    cfg = perseus_config.get() if cfg is None else cfg
    with _lock:
        policy = environment_policy()
        if _world is not None:
            if not renew or policy == _world.policy or _torch_dist() is None:
                return _world
            _world.close()
            _world = None
        eng, store = _make(cfg, policy, _generation)
        _world = World(eng, policy, _generation, store)
        _generation += 1
        _exit.register(release)
        return _world


def agree_next_ports(count: int) -> List[int]:
    """`count` free ports on rank 0's host, the same on every rank (rank 0 picks them, a broadcast over the engine
    tells the others; collective). The first is the next engine's store port."""
    global _next_engine_port
    found = _world
    if found is None or found.size < 2:
        return []
    picked = torch.tensor([_free_port() for _ in range(count)] if found.rank == 0 else [0] * count, dtype=torch.int64)
    found.engine.broadcast(found.next_name("perseus.next_ports"), buffer_of(picked), 0)
    ports = [int(p) for p in picked.tolist()]
    _next_engine_port = ports[0]
    return ports


def release() -> None:
    """Shut the engine down (every rank does it: a collective shutdown)."""
    global _world
    with _lock:
        if _world is not None:
            _world.close()
        _world = None
