"""Horovod's process sets, framework-neutral: the ProcessSet object, its registration (ids as Horovod gives them)
and the check a collective makes of its `process_set=` argument. A binding attaches to each registered set what
runs its collectives (`handle`: perseus.torch attaches an engine over the set's ranks, perseus.engine.groups)."""

import threading
from typing import Any, Callable, Dict, List, Optional


class ProcessSet:
    """A set of global ranks. The global set (ranks None, id 0) is every rank; another set takes part in
    collectives once registered (hvd.add_process_set or hvd.init(process_sets=...))."""

    def __init__(self, ranks: Optional[Any] = None) -> None:
        self.ranks = None if ranks is None else sorted(int(r) for r in ranks)  # type: Optional[List[int]]
        self.process_set_id = 0 if ranks is None else None  # type: Optional[int]
        self.handle = None  # type: Any
        self.closed_by = None  # type: Optional[str]  # what unregistered it last (CLOSED_BY_*)

    def size(self) -> int:
        return _queries["size"]() if self.ranks is None else len(self.ranks)

    def rank(self) -> int:
        """This rank's index in the set, -1 when it is not a member."""
        me = _queries["rank"]()
        if self.ranks is None:
            return me
        return self.ranks.index(me) if me in self.ranks else -1

    def included(self) -> bool:
        return self.ranks is None or _queries["rank"]() in self.ranks

    def __repr__(self) -> str:
        return "ProcessSet(process_set_id={}, ranks={})".format(self.process_set_id, self.ranks)


# what unregistered a set, as the error of a later collective on it says it ("... it was closed by <this>")
CLOSED_BY_SHUTDOWN = "hvd.shutdown(): register it again after hvd.init(), with hvd.add_process_set(...) on every rank"
CLOSED_BY_RESET = ("an elastic reset (the job re-formed; its ranks and size may have changed): register it again on "
                   "every rank with hvd.add_process_set(...) after the reset, e.g. in a reset callback "
                   "(state.register_reset_callbacks)")
CLOSED_BY_REMOVE = "hvd.remove_process_set(...): to use it again, call hvd.add_process_set(...) on every rank"

global_process_set = ProcessSet()
_queries = {}  # type: Dict[str, Callable[[], int]]
_lock = threading.Lock()
_registered = {}  # type: Dict[int, ProcessSet]
_next_id = [1]


def bind_queries(size: Callable[[], int], rank: Callable[[], int], engine: Optional[Callable[[], Any]] = None) -> None:
    """The binding's job size and global rank, which ProcessSet answers with (and the job's engine, for Group)."""
    _queries["size"], _queries["rank"] = size, rank
    if engine is not None:
        _queries["engine"] = engine


def is_global(process_set: Any) -> bool:
    return process_set is None or process_set is global_process_set or (
        isinstance(process_set, ProcessSet) and process_set.process_set_id == 0)


def reserve(ranks: List[int]) -> int:
    """The id the next registered set gets (every rank registers sets in the same order, so ids agree)."""
    with _lock:
        if any(other.ranks == ranks for other in _registered.values()):
            raise ValueError("a process set with ranks {} exists already: use it".format(ranks))
        set_id = _next_id[0]
        _next_id[0] += 1
        return set_id


def register(process_set: ProcessSet, set_id: int, handle: Any) -> ProcessSet:
    with _lock:
        process_set.process_set_id, process_set.handle, process_set.closed_by = set_id, handle, None
        _registered[set_id] = process_set
    return process_set


def unregister(process_set: Any, closed_by: str = CLOSED_BY_REMOVE) -> Optional[ProcessSet]:
    """Forgets a registered set (returns it), or None when it was not registered."""
    with _lock:
        set_id = getattr(process_set, "process_set_id", None)
        if set_id is None or set_id == 0 or _registered.get(set_id) is not process_set:
            return None
        del _registered[set_id]
    process_set.process_set_id, process_set.closed_by = None, closed_by
    return process_set


def unregister_all(closed_by: str = CLOSED_BY_SHUTDOWN) -> List[ProcessSet]:
    """At shutdown (or an elastic reset: closed_by CLOSED_BY_RESET): every registered set, forgotten; ids start
    again at 1."""
    with _lock:
        found = list(_registered.values())
        _registered.clear()
        _next_id[0] = 1
    for process_set in found:
        process_set.process_set_id, process_set.closed_by = None, closed_by
    return found


def lookup(set_id: int) -> Optional[ProcessSet]:
    """The registered set of id `set_id` (0: the global set), or None."""
    if int(set_id) == 0:
        return global_process_set
    with _lock:
        return _registered.get(int(set_id))


def registered_with(handle: Any) -> Optional[ProcessSet]:
    """The registered set whose binding handle is `handle`, or None."""
    with _lock:
        for process_set in _registered.values():
            if process_set.handle is handle:
                return process_set
    return None


def is_registered(process_set: Any) -> bool:
    return isinstance(process_set, ProcessSet) and process_set.process_set_id is not None and \
        lookup(process_set.process_set_id) is process_set


def not_registered(process_set: Any, api: str) -> ValueError:
    """The error of a collective on a set that is not registered: what closed it, when it was registered once."""
    closed_by = getattr(process_set, "closed_by", None) if isinstance(process_set, ProcessSet) else None
    if closed_by:
        return ValueError("{}: {!r} is not registered any more: it was closed by {}".format(
            api, process_set, closed_by))
    return ValueError("{}: {!r} is not a registered process set: call hvd.add_process_set(...) on every rank first "
                      "(or hvd.init(process_sets=[...]))".format(api, process_set))


def member_set(process_set: Any, api: str) -> Optional[ProcessSet]:
    """None for the global set; the registered set this rank is a member of; else ValueError naming the fix."""
    if is_global(process_set):
        return None
    if not is_registered(process_set):
        raise not_registered(process_set, api)
    if not process_set.included():
        raise ValueError("{}: rank {} is not in {!r}: only its members call collectives on it".format(
            api, _queries["rank"](), process_set))
    return process_set


def check_global(process_set: Any, api: str) -> None:
    """A collective's `process_set=`: the global set or a registered set this rank belongs to (ValueError else)."""
    member_set(process_set, api)


# The life of a registered set, the same in every binding; the binding supplies what opens and closes the set's
# handle (its engine over the members, perseus.engine.groups.subgroup_engine).

def add(process_set: Any, job_size: int, open_handle: Callable[[List[int], int], Any]) -> ProcessSet:
    """hvd.add_process_set: `process_set` (a ProcessSet or a list of global ranks) registered with the handle
    `open_handle(ranks, set_id)` returns (None on a rank outside the set). Collective over all ranks, called in
    the same order everywhere (the ids then agree)."""
    from perseus.engine.groups import normalise_ranks

    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    if ps.ranks is None:
        raise ValueError("hvd.add_process_set: the global process set is always there; pass a subset of the ranks")
    if ps.process_set_id is not None:
        raise ValueError("hvd.add_process_set: {!r} is registered already".format(ps))
    ps.ranks = normalise_ranks(ps.ranks, job_size)
    set_id = reserve(ps.ranks)
    return register(ps, set_id, open_handle(ps.ranks, set_id))


def _close(process_set: ProcessSet, close_handle: Callable[[Any], None]) -> None:
    handle, process_set.handle = process_set.handle, None
    if handle is not None:
        close_handle(handle)


def remove(process_set: Any, close_handle: Callable[[Any], None]) -> bool:
    """hvd.remove_process_set (collective): the set forgotten, its handle closed; False if it was not registered."""
    found = unregister(process_set)
    if found is None:
        return False
    _close(found, close_handle)
    return True


def remove_all(close_handle: Callable[[Any], None], closed_by: str = CLOSED_BY_SHUTDOWN) -> None:
    """hvd.shutdown() (or an elastic reset: closed_by CLOSED_BY_RESET): every registered set forgotten and its
    handle closed, before the job's engine. A handle that fails to close does not keep the others open: each is
    closed, then the first failure is raised."""
    failure = None  # type: Optional[BaseException]
    for process_set in unregister_all(closed_by):
        try:
            _close(process_set, close_handle)
        except Exception as error:  # noqa: BLE001  # raised below, once every set is closed
            failure = failure or error
    if failure is not None:
        raise failure


def add_at_init(process_sets: Any, add_one: Callable[[Any], ProcessSet]) -> None:
    """hvd.init(process_sets=...): each set (a ProcessSet or a rank list) added now; "dynamic" or None: none."""
    if process_sets is None or process_sets == "dynamic":
        return
    for process_set in process_sets:
        add_one(process_set)


def root_index(member: Optional[ProcessSet], root_rank: int, job_size: int, api: str) -> int:
    """A collective's root_rank (a global rank, as in Horovod) as the set it runs on numbers it: unchanged on the
    global set (`member` None), its index among the set's ranks otherwise; ValueError when it is not a member."""
    if member is None or member.ranks is None:
        if not 0 <= root_rank < job_size:
            raise ValueError("{}: root_rank={} is not a rank of this {}-rank job".format(api, root_rank, job_size))
        return root_rank
    if root_rank not in member.ranks:
        raise ValueError("{}: root_rank={} is not in the process set {}".format(api, root_rank, member.ranks))
    return member.ranks.index(root_rank)


class Group(object):
    """Where a collective runs: the engine, this rank's number and the size, of the global set (the job's engine,
    bind_queries) or of a registered set this rank is a member of (its handle; refused by name otherwise); `scope`
    counts the set's unnamed calls apart."""

    def __init__(self, process_set: Any, api: str) -> None:
        self.api = api
        self.member = member_set(process_set, api)  # type: Optional[ProcessSet]
        if self.member is None:
            self.engine, self.rank, self.size = _queries["engine"](), _queries["rank"](), _queries["size"]()
            self.scope = None  # type: Optional[int]
        else:
            self.engine, self.rank, self.size = self.member.handle, self.member.rank(), self.member.size()
            self.scope = self.member.process_set_id

    def root(self, global_rank: int) -> int:
        """A global root rank as this group numbers it."""
        return root_index(self.member, global_rank, self.size, self.api)
