"""Whether this process joined the job (hvd.init) and the world it joined: what every hvd module asks first."""

import threading
from typing import Any, List, Optional

from perseus.horovod_kit.errors import HorovodNotInitialized
from perseus.torch import _comm


class JoinState:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.initialized = False
        self.owns_default_group = False
        self.shutdown_callbacks: List[Any] = []
        self.shutdown_at_exit = False
        self.next_torch_port: Optional[int] = None  # the default group's port after a re-init (see basics.shutdown())


state = JoinState()


def is_initialized() -> bool:
    return state.initialized and _comm.current() is not None


def world() -> _comm.World:
    if not is_initialized():
        raise HorovodNotInitialized("Horovod has not been initialized; use hvd.init().")
    found = _comm.current()
    assert found is not None
    return found
