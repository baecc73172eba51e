"""hvd.elastic for PyTorch (Horovod 0.28's horovod.torch.elastic): run, TorchState, ElasticSampler, plus the
framework-neutral State and ObjectState. Works under elastic perseusrun (--min-np / --host-discovery-script):

    @hvd.elastic.run
    def train(state): ...
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0)
    train(state)

Elastic jobs are Gloo only: tensors on the CPU (docs/elastic.md says why CUDA is not covered).
"""

from typing import Any, Callable

from perseus import engine as _native
from perseus.horovod_kit.elastic import ObjectState, State, run_fn
from perseus.horovod_kit.errors import HorovodInternalError
from perseus.torch.horovod import basics, collectives
from perseus.torch.horovod.elastic.sampler import ElasticSampler
from perseus.torch.horovod.elastic.state import TorchState

# what a lost rank looks like from inside a collective: Horovod's error, or the engine's own where a call site
# does not wrap it (a broadcast inside state.sync())
_LOST_RANK = (HorovodInternalError, _native.CommunicationError, _native.ShutDownError)


def _reset() -> None:
    basics.shutdown_local()
    collectives.forget_names()  # the next generation's ranks count unnamed collectives from zero
    basics.init()


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: func(state, ...) is retried from the last commit after a lost worker, and the job is re-formed
    (new ranks and size) when hosts are added or removed; state is synced from rank 0 before each attempt."""
    return run_fn(func, _reset, _LOST_RANK)


__all__ = ["ElasticSampler", "ObjectState", "State", "TorchState", "run"]
