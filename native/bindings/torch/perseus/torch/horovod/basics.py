"""hvd.init() and who-am-I queries (size, rank, local/cross rank), plus what this build supports."""

import atexit
import os
from datetime import timedelta
from typing import Any, Optional

import torch
import torch.distributed as dist

from perseus import config as perseus_config
from perseus import launch
from perseus.torch import _comm
from perseus.horovod_kit.capabilities import Capabilities
from perseus.horovod_kit.errors import HorovodNotInitialized, NotSupportedByPerseus  # noqa: F401  (hvd's name)
from perseus.horovod_kit import process_sets as _process_sets
from perseus.torch.horovod import _joined
from perseus.torch.horovod import process_sets as sets


_state = _joined.state


def _default_backend() -> str:
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "cpu:gloo,cuda:nccl"
    return "gloo"


def _master_address(env: launch.LaunchEnv) -> Optional[str]:
    return env.master_addr or os.environ.get("MASTER_ADDR") or None


def _torch_master_port(env: launch.LaunchEnv) -> Optional[int]:
    if env.master_port is not None:
        return env.master_port
    raw = os.environ.get("MASTER_PORT", "").strip()
    return int(raw) if raw.isdigit() else None


def check_ports(cfg: perseus_config.PerseusConfig, env: launch.LaunchEnv) -> None:
    torch_port = _torch_master_port(env)
    if torch_port is not None and torch_port == cfg.master_port and cfg.is_set("PERSEUS_MASTER_PORT"):
        raise perseus_config.ConfigError(
            "PERSEUS_MASTER_PORT={} is the same port as MASTER_PORT={} (torch's rendezvous): perseus's engine serves "
            "its own rendezvous on MASTER_ADDR and needs another port; set PERSEUS_MASTER_PORT to a free port other "
            "than {}, or unset it so that perseus picks one".format(cfg.master_port, torch_port, torch_port))


def _plain_mpirun(env: launch.LaunchEnv) -> bool:
    return env.launcher in ("openmpi", "mpich") and _master_address(env) is None


def _init_default_group(cfg: perseus_config.PerseusConfig, env: launch.LaunchEnv) -> bool:
    """torch's default process group for DDP and the user's own torch.distributed calls, where the launch
    gives torch a rendezvous (perseus's collectives do not need it). Returns whether one was made."""
    timeout = timedelta(seconds=cfg.gloo_timeout_seconds)
    backend = _default_backend()
    if env.size == 1:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
        return True
    if _plain_mpirun(env) or not cfg.use_ddp_launcher:
        return False  # mpirun / perseusrun style: the engine's own rendezvous (through MPI under a plain mpirun)
    address = _master_address(env)
    port = _torch_master_port(env)
    if address is None or port is None:
        raise RuntimeError(
            "hvd.init(): PERSEUS_USE_DDP_LAUNCHER=1 (the default) joins the torch launcher's rendezvous, but "
            "MASTER_ADDR/MASTER_PORT are not set (this job was started by '{}'); start it with torchrun / "
            "torch.distributed.launch, or set PERSEUS_USE_DDP_LAUNCHER=0 so that perseus opens its own rendezvous "
            "on MASTER_ADDR:PERSEUS_MASTER_PORT (mpirun / perseusrun)".format(env.launcher))
    check_ports(cfg, env)
    # env:// lets torch reuse torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE) instead of binding MASTER_PORT again
    from_environment = "MASTER_ADDR" in os.environ and "MASTER_PORT" in os.environ
    init_method = "env://" if from_environment else "tcp://{}:{}".format(address, port)
    if _state.next_torch_port is not None:
        # a re-init: the port every rank agreed at hvd.shutdown(), never MASTER_PORT again (rank 0's old store may
        # still be closing, or be held by a model that still references the old group)
        init_method, _state.next_torch_port = "tcp://{}:{}".format(address, _state.next_torch_port), None
    dist.init_process_group(backend, init_method=init_method, rank=env.rank, world_size=env.size, timeout=timeout)
    return True


def init(comm: Optional[Any] = None, process_sets: Optional[Any] = None) -> None:
    """Join the job: start perseus's engine (and torch's default process group where the launch gives torch a
    rendezvous and nobody made one). Under a plain mpirun with no MASTER_ADDR the engine agrees its address and
    port through MPI, and torch.distributed is left alone."""
    if comm is not None:
        raise ValueError("not supported: hvd.init(comm=...) (MPI sub-communicators); perseus runs on all ranks of the job")
    with _state.lock:
        if _state.initialized and _comm.job() is not None:
            _register_sets(process_sets)
            return
        from perseus.horovod_kit import elastic_worker
        if elastic_worker.enabled():
            elastic_worker.rendezvous()  # blocks until perseusrun forms the next generation; exports its numbers
        cfg = perseus_config.get()
        env = launch.detect()
        check_ports(cfg, env)
        if not dist.is_initialized():
            _state.owns_default_group = _init_default_group(cfg, env)
        _comm.world(cfg)
        _state.initialized = True
        _register_sets(process_sets)
        if not _state.shutdown_at_exit:
            # as Horovod does: a script that never calls hvd.shutdown() still leaves the job in order
            atexit.register(_shutdown_at_exit)
            _state.shutdown_at_exit = True


def _register_sets(process_sets: Any) -> None:
    sets.register_at_init(process_sets)


def shutdown() -> None:
    """Leave the job: shut perseus's engine down, destroy the default group if hvd.init() made it. Collective.
    A later hvd.init() rendezvous on ports every rank agreed here (Horovod's harness re-initialises after every
    test): a rank that re-initialises first never reaches rank 0's old stores."""
    _shutdown(agree_ports=True)


def _shutdown_at_exit() -> None:
    _shutdown(agree_ports=False)  # the process ends: no next hvd.init()


def _shutdown(agree_ports: bool, sets_closed_by: str = _process_sets.CLOSED_BY_SHUTDOWN) -> None:
    with _state.lock:
        for callback in list(_state.shutdown_callbacks):
            callback()
        _state.shutdown_callbacks.clear()
        sets.close_all(sets_closed_by)
        if agree_ports and _comm.current() is not None:
            ports = _comm.agree_next_ports(2)
            _state.next_torch_port = ports[1] if ports and _state.owns_default_group else None
        _comm.release()
        if _state.owns_default_group and dist.is_initialized():
            dist.destroy_process_group()
        _state.owns_default_group = False
        _state.initialized = False


def shutdown_local() -> None:
    """Leave a job whose ranks may be gone (an elastic reset): close this rank's engines without agreeing anything
    with the others. The process sets registered so far are closed: a collective on one is refused, naming the
    reset, until it is registered again."""
    _shutdown(agree_ports=False, sets_closed_by=_process_sets.CLOSED_BY_RESET)


def on_shutdown(callback: Any) -> None:
    _state.shutdown_callbacks.append(callback)


is_initialized = _joined.is_initialized
world = _joined.world


def size() -> int:
    return world().size


def rank() -> int:
    return world().rank


def local_rank() -> int:
    return world().local_rank


def local_size() -> int:
    return world().local_size


def cross_rank() -> int:
    """Index of this rank's node (Horovod: rank among the processes with the same local rank)."""
    return world().node


def cross_size() -> int:
    """Number of nodes."""
    return world().num_nodes


def is_homogeneous() -> bool:
    found = world()
    return found.size == found.local_size * found.num_nodes


def _device_report() -> Any:
    _comm.load_library()
    from perseus.torch import _device
    return _device.report()


_capabilities = Capabilities(_device_report, is_initialized)
def _job_size() -> int:
    world()
    return _comm.job().size  # type: ignore[union-attr]


def _job_rank() -> int:
    world()
    return _comm.job().rank  # type: ignore[union-attr]


_process_sets.bind_queries(_job_size, _job_rank)

gloo_built = _capabilities.gloo_built
nccl_built = _capabilities.nccl_built
cuda_built = _capabilities.cuda_built
mpi_built = _capabilities.mpi_built
rocm_built = _capabilities.rocm_built
ddl_built = _capabilities.ddl_built
ccl_built = _capabilities.ccl_built
gloo_enabled = _capabilities.gloo_enabled
mpi_enabled = _capabilities.mpi_enabled
mpi_threads_supported = _capabilities.mpi_threads_supported


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    raise NotSupportedByPerseus("hvd.start_timeline(): perseus writes no Horovod timeline; profile with "
                                "torch.profiler (perseus's collectives appear as their own ranges)")


def stop_timeline() -> None:
    raise NotSupportedByPerseus("hvd.stop_timeline(): perseus writes no Horovod timeline; profile with "
                                "torch.profiler")


add_process_set = sets.add_process_set
remove_process_set = sets.remove_process_set
