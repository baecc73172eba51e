"""Horovod's basics for a binding whose job is one perseus engine (perseus.engine.Engine, created on the binding's
own library): hvd.init() / shutdown() / is_initialized() and the rank numbers, read from the engine once it has
joined the job. The binding supplies how its engine starts (and is handed to its native code) and stops."""

import threading
from typing import Any, Callable, Dict, Optional

from perseus.horovod_kit.errors import HorovodNotInitialized


class EngineBasics:
    def __init__(self, start: Callable[..., Any], stop: Callable[[Any], None]) -> None:
        self._start, self._stop = start, stop
        self._lock = threading.Lock()
        self._engine = None  # type: Optional[Any]
        self._info = None  # type: Optional[Dict[str, int]]

    def init(self, **policy: Any) -> bool:
        """Starts the engine (`start(**policy)`) unless it runs already; True when this call started it."""
        with self._lock:
            if self._engine is not None:
                return False
            engine = self._start(**policy)
            self._engine, self._info = engine, engine.info()
            return True

    def shutdown(self) -> None:
        """Stops the engine (collective over every rank); init() may start one again afterwards."""
        with self._lock:
            engine, self._engine, self._info = self._engine, None, None
        if engine is not None:
            self._stop(engine)

    def is_initialized(self) -> bool:
        return self._engine is not None

    def engine(self) -> Any:
        engine = self._engine
        if engine is None:
            raise HorovodNotInitialized()
        return engine

    def _number(self, key: str) -> int:
        info = self._info
        if info is None:
            raise HorovodNotInitialized()
        return int(info[key])

    def size(self) -> int:
        return self._number("size")

    def rank(self) -> int:
        return self._number("rank")

    def local_size(self) -> int:
        return self._number("local_size")

    def local_rank(self) -> int:
        return self._number("local_rank")

    def cross_size(self) -> int:
        """Nodes in the job (Horovod's cross size: the ranks with the same local rank)."""
        return self._number("num_nodes")

    def cross_rank(self) -> int:
        """This rank's node (Horovod's cross rank)."""
        return self._number("node")
