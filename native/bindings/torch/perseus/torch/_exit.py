"""Leave the job in order at interpreter exit, before the interpreter tears down torch.

Registered (once) when perseus makes its engine, which is after torch.distributed was imported, so it runs
before torch's own exit handlers (atexit is last-in, first-out). It stops perseus's completion thread,
shuts the engine down (a collective shutdown: peers see an orderly end), and destroys torch's default
process group if the script left it alive: without that, interpreter teardown can destroy Gloo objects
whose threads are still joinable and the process aborts ("terminate called without an active exception",
exit 134) after its work is done.
"""

import atexit
import threading
import time
from typing import Callable, Optional

# A Gloo worker thread of torch's default group drops a finished work (whose thread-local state holds Python
# objects, so it takes the GIL) a moment after the work completes. Once the interpreter finalises, taking the
# GIL ends that thread inside a noexcept destructor: std::terminate, exit 134 (seen with plain torch too).
# Sleeping here, with the GIL released and the interpreter alive, lets such a thread finish first.
SETTLE_SECONDS = 0.1

_release: Optional[Callable[[], None]] = None  # the engine's shutdown (perseus.torch._comm.release)
_lock = threading.Lock()


def register(release: Callable[[], None]) -> None:
    """Run `release` (the engine's shutdown) at interpreter exit, then destroy torch's default group; once."""
    global _release
    with _lock:
        if _release is None:
            atexit.register(leave)
        _release = release


def leave() -> None:
    """Shut the engine down and destroy torch's default group; safe to call more than once."""
    import torch.distributed as dist

    time.sleep(SETTLE_SECONDS)
    if _release is not None:
        _release()
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    time.sleep(SETTLE_SECONDS)
