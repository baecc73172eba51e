"""hvd.elastic for TensorFlow 2 (Horovod 0.28's horovod.tensorflow.elastic): run, TensorFlowState,
TensorFlowKerasState, plus the framework-neutral State and ObjectState. Works under elastic perseusrun
(--min-np / --host-discovery-script), with eager execution:

    @hvd.elastic.run
    def train(state): ...
    state = hvd.elastic.TensorFlowKerasState(model, optimizer, epoch=0, batch=0)
    train(state)

A reset (a lost worker, hosts added or removed) shuts this rank's engine down without the others and runs
hvd.init() again: the ops then submit to the new generation's engine, with new ranks and size.
"""

from typing import Any, Callable, Tuple, Type

from perseus import engine as _native
from perseus.horovod_kit.elastic import ObjectState, State, run_fn
from perseus.horovod_kit.errors import HorovodInternalError

from .. import _job, basics
from .state import TensorFlowKerasState, TensorFlowState


def _lost_rank() -> Tuple[Type[BaseException], ...]:
    """What a lost rank looks like from inside a collective: the ops fail with UnavailableError (a peer's
    connection broke) or CancelledError (the engine shut down after the failure); engine calls made from Python
    raise the engine's own errors."""
    import tensorflow as tf

    return (HorovodInternalError, tf.errors.UnavailableError, tf.errors.CancelledError,
            _native.CommunicationError, _native.ShutDownError)


def _reset() -> None:
    basics.shutdown_local()
    # the same policy keywords as the first hvd.init(); the new engine numbers unnamed collectives from zero again
    basics.init(**dict(_job.state.policy))


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: func(state, ...) is retried from the last commit after a lost worker, and the job is re-formed
    (new ranks and size) when hosts are added or removed; state is synced from rank 0 before each attempt."""
    return run_fn(func, _reset, _lost_rank())


__all__ = ["ObjectState", "State", "TensorFlowKerasState", "TensorFlowState", "run"]
