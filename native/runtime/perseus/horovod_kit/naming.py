"""Names of collectives: the user's name, or `<kind>.noname.<n>` (Horovod's rule) numbered per kind, so that
ranks issuing the same calls in the same order name them alike.

Horovod's bindings differ in one point, kept here as an option: torch and TensorFlow send a given name as it is,
MXNet qualifies it with the kind (`allreduce.<name>`, Horovod's mpi_ops.cc GetOpName). A `scope` (a process set's
id) counts its unnamed calls apart: only the set's members issue them, so the job's count must not move."""

import itertools
import threading
from typing import Any, Dict, Hashable, Iterator, List, Optional, Tuple


class Namer:
    def __init__(self, qualify_given: bool = False) -> None:
        self._lock = threading.Lock()
        self._qualify_given = qualify_given
        self._counters = {}  # type: Dict[Tuple[Any, str], Iterator[int]]

    def name(self, kind: str, given: Optional[str] = None, scope: Optional[Hashable] = None) -> str:
        if given:
            return "{}.{}".format(kind, given) if self._qualify_given else given
        with self._lock:
            counter = self._counters.setdefault((scope, kind), itertools.count())
            return "{}.noname.{}".format(kind, next(counter))

    def names(self, kind: str, given: Optional[str], count: int, scope: Optional[Hashable] = None) -> List[str]:
        """The names of a grouped call's `count` collectives: one name for the call, `.<i>` for each member."""
        base = self.name(kind, given, scope)
        return ["{}.{}".format(base, i) for i in range(count)]

    def reset(self) -> None:
        with self._lock:
            self._counters.clear()
