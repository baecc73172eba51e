"""What every child perseusrun starts (ranks, elastic workers, the store process) sets up before exec."""

import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Child side, before exec: SIGKILL this process if perseusrun itself is killed (-9) and cannot clean up."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
