"""hvd.init() and who-am-I queries (size, rank, local/cross rank), plus what this build supports."""

import atexit
import os
import threading
from datetime import timedelta
from typing import Any, List, Optional

import torch
import torch.distributed as dist

from perseus import config as perseus_config
from perseus import launch
from perseus.torch import _world


class HorovodNotInitialized(ValueError):
    """A Horovod API call before hvd.init() (Horovod raises ValueError too)."""


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.initialized = False
        self.owns_default_group = False
        self.shutdown_callbacks: List[Any] = []
        self.shutdown_at_exit = False


_state = _State()


def _default_backend() -> str:
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "cpu:gloo,cuda:nccl"
    return "gloo"


def _init_default_group(cfg: perseus_config.PerseusConfig, env: launch.LaunchEnv) -> None:
    timeout = timedelta(seconds=cfg.gloo_timeout_seconds)
    backend = _default_backend()
    if env.size == 1:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
        return
    if cfg.use_ddp_launcher:
        address = _world.master_address(env)
        port = env.master_port or (int(os.environ["MASTER_PORT"]) if os.environ.get("MASTER_PORT", "").isdigit() else None)
        if address is None or port is None:
            raise RuntimeError(
                "hvd.init(): PERSEUS_USE_DDP_LAUNCHER=1 (the default) joins the torch launcher's rendezvous, but "
                "MASTER_ADDR/MASTER_PORT are not set (this job was started by '{}'); start it with torchrun / "
                "torch.distributed.launch, or set PERSEUS_USE_DDP_LAUNCHER=0 so that perseus opens its own rendezvous "
                "on MASTER_ADDR:PERSEUS_MASTER_PORT (mpirun / perseusrun)".format(env.launcher))
        _world.check_ports(cfg, env)
        # env:// lets torch reuse torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE) instead of binding MASTER_PORT again
        from_environment = "MASTER_ADDR" in os.environ and "MASTER_PORT" in os.environ
        init_method = "env://" if from_environment else "tcp://{}:{}".format(address, port)
        dist.init_process_group(backend, init_method=init_method, rank=env.rank, world_size=env.size, timeout=timeout)
        return
    store = _world.rendezvous_store(env.rank, env.size, cfg, env)
    dist.init_process_group(backend, store=dist.PrefixStore("torch", store), rank=env.rank, world_size=env.size,
                            timeout=timeout)


def init(comm: Optional[Any] = None, process_sets: Optional[Any] = None) -> None:
    """Join the job: create the default process group if nobody did, then the perseus groups."""
    if comm is not None:
        raise ValueError("not supported: hvd.init(comm=...) (MPI sub-communicators); perseus runs on all ranks of the job")
    if process_sets is not None:
        raise ValueError("not supported: hvd.init(process_sets=...); perseus collectives run on the global process set")
    with _state.lock:
        if _state.initialized and dist.is_initialized():
            return
        cfg = perseus_config.get()
        if not dist.is_initialized():
            _init_default_group(cfg, launch.detect())
            _state.owns_default_group = True
        _world.world(cfg)
        _state.initialized = True
        if not _state.shutdown_at_exit:
            # as Horovod does: a script that never calls hvd.shutdown() still leaves the job in order, instead of
            # the interpreter tearing down live process groups (c10d aborts: "terminate called without an active
            # exception")
            atexit.register(shutdown)
            _state.shutdown_at_exit = True


def shutdown() -> None:
    """Leave the job: stop perseus's workers, drop its groups, destroy the default group if hvd.init() made it."""
    with _state.lock:
        for callback in list(_state.shutdown_callbacks):
            callback()
        _state.shutdown_callbacks.clear()
        _world.forget()
        if _state.owns_default_group and dist.is_initialized():
            dist.destroy_process_group()
        _state.owns_default_group = False
        _state.initialized = False


def on_shutdown(callback: Any) -> None:
    _state.shutdown_callbacks.append(callback)


def is_initialized() -> bool:
    return _state.initialized and dist.is_initialized() and _world.current() is not None


def world() -> _world.PerseusWorld:
    if not is_initialized():
        raise HorovodNotInitialized("Horovod has not been initialized; use hvd.init().")
    found = _world.current()
    assert found is not None
    return found


def size() -> int:
    return world().size


def rank() -> int:
    return world().rank


def local_rank() -> int:
    return world().topology.local_rank


def local_size() -> int:
    return world().topology.local_size


def cross_rank() -> int:
    """Index of this rank's node (Horovod: rank among the processes with the same local rank)."""
    return world().topology.node


def cross_size() -> int:
    """Number of nodes."""
    return world().topology.num_nodes


def is_homogeneous() -> bool:
    return world().topology.uniform


def mpi_built() -> bool:
    return bool(dist.is_mpi_available())


def gloo_built() -> bool:
    return bool(dist.is_gloo_available())


def nccl_built() -> bool:
    return bool(dist.is_nccl_available())


def cuda_built() -> bool:
    return torch.version.cuda is not None


def rocm_built() -> bool:
    return getattr(torch.version, "hip", None) is not None


def ddl_built() -> bool:
    return False


def ccl_built() -> bool:
    return False


def _backends() -> List[str]:
    if not dist.is_initialized():
        return []
    return sorted(set(_world.device_backends(str(dist.get_backend())).values()))


def mpi_enabled() -> bool:
    return "mpi" in _backends()


def gloo_enabled() -> bool:
    return "gloo" in _backends()


def mpi_threads_supported() -> bool:
    if not mpi_enabled():
        raise ValueError("MPI is not the transport of this job (backends: {}); mpi_threads_supported() asks about MPI"
                         .format(", ".join(_backends()) or "none"))
    return False
