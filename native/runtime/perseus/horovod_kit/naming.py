"""Names of collectives: the user's name, or `<kind>.noname.<n>` (Horovod's rule) numbered per kind, so that
ranks issuing the same calls in the same order name them alike."""

import itertools
import threading
from typing import Dict, Iterator, Optional


class Namer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters = {}  # type: Dict[str, Iterator[int]]

    def name(self, kind: str, given: Optional[str] = None) -> str:
        if given:
            return given
        with self._lock:
            counter = self._counters.setdefault(kind, itertools.count())
            return "{}.noname.{}".format(kind, next(counter))

    def reset(self) -> None:
        with self._lock:
            self._counters.clear()
