"""Elastic training state, framework-neutral (Horovod 0.28's horovod.common.elastic): State, ObjectState and
the retry loop behind every framework's `hvd.elastic.run`.

A State keeps a committed copy of what training needs (commit() saves it, restore() goes back to it, sync()
hands rank 0's copy to every rank). run_fn(func, reset) calls func(state) until it returns: on
HorovodInternalError (a rank was lost inside a collective) the state is restored to its last commit, the job is
re-formed (reset) and synced; on HostsUpdatedInterrupt (commit() or check_host_updates() learnt that the driver
planned a new generation: hosts were added or removed) the job is re-formed and, unless only hosts were removed,
synced. Host updates come from elastic perseusrun's driver (perseus.horovod_kit.elastic_worker); rank 0 asks it
and broadcasts the answer, so every rank raises the interrupt at the same commit.
"""

import functools
import queue
from typing import Any, Callable, Dict, Iterable, List, Tuple, Type

from perseus.horovod_kit import elastic_worker
from perseus.horovod_kit.errors import HorovodInternalError, HostsUpdatedInterrupt


class State:
    """In-memory training state tracked across workers. bcast_object(obj) returns rank 0's obj on every rank;
    get_rank() is this worker's rank now."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int]) -> None:
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._host_messages: "queue.Queue[Tuple[int, bool]]" = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks: List[Callable[[], None]] = []

    def register_reset_callbacks(self, callbacks: Iterable[Callable[[], None]]) -> None:
        """Functions to call after every reset (workers added or removed), e.g. to rescale the learning rate."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self) -> None:
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp: int, removed_only: bool) -> None:
        """Horovod's notification hook: an update the next check_host_updates() acts on."""
        self._host_messages.put((timestamp, removed_only))

    def commit(self) -> None:
        """Saves the state (the copy restore() returns to), then checks for host updates: may raise
        HostsUpdatedInterrupt. Committing costs a copy: commit every few batches rather than every one."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self) -> None:
        """Raises HostsUpdatedInterrupt on every rank alike when the driver has planned a new generation."""
        baseline = self._last_updated_timestamp
        assignment = elastic_worker.current()
        if assignment is not None:
            baseline = max(baseline, assignment.updates)
        latest, removed_only = baseline, True
        while not self._host_messages.empty():
            timestamp, removed = self._host_messages.get()
            if timestamp > latest:
                latest, removed_only = timestamp, removed_only and removed
        if self._rank() == 0 and assignment is not None:
            counter, removed = elastic_worker.host_updates()
            if counter > latest:
                latest, removed_only = counter, removed_only and removed
        previous, latest, removed_only = self._bcast_object((baseline, latest, removed_only))
        self._last_updated_timestamp = latest
        if latest > previous:
            raise HostsUpdatedInterrupt(removed_only)

    def save(self) -> None:
        """Saves the state to host memory."""
        raise NotImplementedError("{} does not implement save()".format(type(self).__name__))

    def restore(self) -> None:
        """Goes back to the last committed state, dropping uncommitted changes."""
        raise NotImplementedError("{} does not implement restore()".format(type(self).__name__))

    def sync(self) -> None:
        """Makes every rank's state rank 0's."""
        raise NotImplementedError("{} does not implement sync()".format(type(self).__name__))

    def reset(self) -> None:
        """Adjusts the state after a reset, before it is synced (e.g. to the new number of workers)."""


class ObjectState(State):
    """State of plain picklable Python objects, given as keyword arguments and read as attributes."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int], **kwargs: Any) -> None:
        self._saved_state: Dict[str, Any] = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self) -> None:
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self) -> None:
        self._set_attrs()

    def sync(self) -> None:
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self) -> None:
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def run_fn(func: Callable[..., Any], reset: Callable[[], None],
           internal_errors: Tuple[Type[BaseException], ...] = (HorovodInternalError,)) -> Callable[..., Any]:
    """func(state, ...) run until it returns, re-forming the job after a lost rank or a host update.
    internal_errors: what a framework's collectives raise when a rank is lost."""

    @functools.wraps(func)
    def wrapper(state: State, *args: Any, **kwargs: Any) -> Any:
        skip_sync = False
        while True:
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except internal_errors as error:
                if not elastic_worker.enabled():
                    raise HorovodInternalError(
                        "not supported: recovering from a lost rank needs elastic perseusrun (--min-np or "
                        "--host-discovery-script); this job was started without it ({})".format(error)) from error
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as interrupt:
                skip_sync = interrupt.skip_sync
            reset()
            state.on_reset()

    return wrapper
