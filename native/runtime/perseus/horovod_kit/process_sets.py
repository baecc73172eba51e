"""Process sets: perseus runs every collective on the global set (all ranks of the job) until process sets are
built (a separate issue). `process_set=` naming any other set is refused by name."""

from typing import Any, Callable, Dict, Optional

from perseus.horovod_kit.errors import NotSupportedByPerseus


class ProcessSet:
    """Horovod's ProcessSet object for the global set: all ranks, id 0."""

    def __init__(self, ranks: Optional[Any] = None) -> None:
        self.ranks = None if ranks is None else sorted(int(r) for r in ranks)
        self.process_set_id = 0 if ranks is None else None

    def size(self) -> int:
        return _queries["size"]()

    def rank(self) -> int:
        return _queries["rank"]()

    def included(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "ProcessSet(process_set_id={}, ranks={})".format(self.process_set_id, self.ranks)


global_process_set = ProcessSet()
_queries = {}  # type: Dict[str, Callable[[], int]]


def bind_queries(size: Callable[[], int], rank: Callable[[], int]) -> None:
    """The binding's size()/rank(), which the global ProcessSet answers with."""
    _queries["size"], _queries["rank"] = size, rank


def check_global(process_set: Any, api: str) -> None:
    """Refuse any process set but the global one, naming what to do."""
    if process_set is None or process_set is global_process_set:
        return
    if isinstance(process_set, ProcessSet) and process_set.process_set_id == 0:
        return
    raise NotSupportedByPerseus(
        "{}: process_set={!r} is not supported: perseus runs collectives on the global process set only "
        "(process sets are not built yet); drop process_set= or pass hvd.global_process_set".format(api, process_set))


def refuse(api: str) -> NotSupportedByPerseus:
    return NotSupportedByPerseus(
        "{}: process sets other than the global one are not supported by perseus yet; every collective runs on "
        "all ranks (hvd.global_process_set)".format(api))
