"""Leave the job in order at interpreter exit, before the interpreter tears down torch.

Registered (once) when perseus builds its first world, which is after torch.distributed was imported,
so it runs before torch's own exit handlers (atexit is last-in, first-out). It drains perseus's stream
threads (bounded by DRAIN_SECONDS in all, so exit never hangs on a peer that is gone), drops perseus's
process groups and store connection, and destroys torch's default process group if the script left it
alive: without that, interpreter teardown can destroy Gloo objects whose threads are still joinable and
the process aborts ("terminate called without an active exception", exit 134) after its work is done.
"""

import atexit
import threading
import time
import weakref
from typing import Any

import torch.distributed as dist

DRAIN_SECONDS = 10.0
# A Gloo worker thread drops a finished work (whose thread-local state holds Python objects, so it takes the
# GIL) a moment after the work completes. Once the interpreter finalises, taking the GIL ends that thread
# inside a noexcept destructor: std::terminate, exit 134 (seen with plain torch too). Sleeping here, with the
# GIL released and the interpreter alive, lets such a thread finish first.
SETTLE_SECONDS = 0.1

_engines: "weakref.WeakSet[Any]" = weakref.WeakSet()
_registered = False
_lock = threading.Lock()


def track(engine: Any) -> None:
    """Drain `engine` (anything with shutdown(deadline)) at exit."""
    _engines.add(engine)
    register()


def register() -> None:
    global _registered
    with _lock:
        if not _registered:
            atexit.register(leave)
            _registered = True


def leave() -> None:
    """Drain, drop and destroy; safe to call more than once."""
    from perseus.torch import _world

    deadline = time.monotonic() + DRAIN_SECONDS
    for engine in list(_engines):
        engine.shutdown(deadline)
    time.sleep(SETTLE_SECONDS)
    _world.release()
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    time.sleep(SETTLE_SECONDS)
