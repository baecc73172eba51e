"""Horovod's capability queries for perseus.mxnet: the kit's answers (perseus.horovod_kit.capabilities), told
what this binding's collectives use. Host NDArrays are reduced on the host over the engine's Gloo; GPU NDArrays of
a CUDA wheel take the engine's device path, which stages them through Gloo too (the binding's core has no CUDA
kernels, which NCCL's choice needs: docs/device.md), so NCCL never carries them (nccl_built() is 0); cuda_built()
says whether this wheel was built for a CUDA build of MXNet."""
from typing import Any, Dict

from perseus.horovod_kit.capabilities import Capabilities

from . import _native, _world


def _host_collectives():
    # type: () -> Dict[str, Any]
    return {"built": bool(_native.read_manifest().get("mxnet_cuda")), "nccl_version": 0}


_capabilities = Capabilities(_host_collectives, _world.is_initialized)
gloo_built = _capabilities.gloo_built
gloo_enabled = _capabilities.gloo_enabled
mpi_built = _capabilities.mpi_built
mpi_enabled = _capabilities.mpi_enabled
mpi_threads_supported = _capabilities.mpi_threads_supported
nccl_built = _capabilities.nccl_built
ddl_built = _capabilities.ddl_built
ccl_built = _capabilities.ccl_built
rocm_built = _capabilities.rocm_built
cuda_built = _capabilities.cuda_built
start_timeline = _capabilities.start_timeline
stop_timeline = _capabilities.stop_timeline
