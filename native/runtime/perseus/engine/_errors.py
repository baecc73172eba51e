"""The engine's failures as Python exceptions: one class per perseus_engine_status of the C ABI (perseus/engine.h)."""

import ctypes

OK, INVALID_ARGUMENT, UNSUPPORTED, COMMUNICATION, MISMATCH, NONFINITE, SHUT_DOWN, PENDING = range(8)


class EngineError(RuntimeError):
    """A failing engine call; .status is the C ABI's perseus_engine_status."""

    status = INVALID_ARGUMENT


class UnsupportedError(EngineError):
    status = UNSUPPORTED


class CommunicationError(EngineError):
    """A peer was lost, a timeout (GLOO_TIMEOUT_SECONDS), or the rendezvous failed."""

    status = COMMUNICATION


class MismatchError(EngineError):
    """The ranks submitted different collectives under one name (the same message on every rank)."""

    status = MISMATCH


class NonFiniteError(EngineError):
    """PERSEUS_ALLREDUCE_NANCHECK=1 found inf/NaN in a reduced result."""

    status = NONFINITE


class ShutDownError(EngineError):
    status = SHUT_DOWN


_ERRORS = {cls.status: cls for cls in (EngineError, UnsupportedError, CommunicationError, MismatchError,
                                        NonFiniteError, ShutDownError)}


def check(lib: ctypes.CDLL, status: int) -> None:
    if status != OK:
        message = lib.perseus_engine_last_error().decode("utf-8", "replace")
        raise _ERRORS.get(status, EngineError)(message)
