"""Process sets for perseus.torch.horovod: hvd.add_process_set / remove_process_set / init(process_sets=...) and
the scope a collective with `process_set=` runs in.

Each registered set gets an engine of its own over its members (perseus.engine.groups: its own negotiation,
stores and Gloo contexts), wrapped as a perseus.torch World; a collective on the set runs with that world in use
(_comm.using), so its record exchange, naming and transport involve the set's members only, and collectives on
disjoint sets run concurrently. root_rank arguments stay global ranks, as in Horovod.
"""

import functools
import inspect
import os
from typing import Any, Callable, List

from perseus.horovod_kit import process_sets as _kit
from perseus.horovod_kit.process_sets import ProcessSet
from perseus.torch import _comm
from perseus.torch.horovod import _joined


def add_process_set(process_set: Any) -> ProcessSet:
    """Registers a set (a ProcessSet or a list of global ranks) on every rank: collective over all ranks, in the
    same order everywhere. Returns the registered ProcessSet."""
    from perseus.engine.groups import subgroup_engine

    job = _joined.world()

    def open_world(ranks: List[int], set_id: int) -> Any:
        engine = subgroup_engine(job.engine, ranks, "torch.{}".format(set_id),
                                 master_addr=os.environ.get("MASTER_ADDR", ""))
        return _comm.World(engine, job.policy, job.generation) if engine is not None else None

    return _kit.add(process_set, job.size, open_world)


def _close_world(world: Any) -> None:
    world.close()


def remove_process_set(process_set: Any) -> bool:
    """Unregisters a set on every rank (collective); its members close its engine. False if it was not registered."""
    return _kit.remove(process_set, _close_world)


def register_at_init(process_sets: Any) -> None:
    """hvd.init(process_sets=...): a list of sets (or rank lists) registered now; "dynamic" needs nothing here."""
    _kit.add_at_init(process_sets, add_process_set)


def close_all(closed_by: str = _kit.CLOSED_BY_SHUTDOWN) -> None:
    """hvd.shutdown() (or an elastic reset: closed_by CLOSED_BY_RESET): every registered set's engine is closed
    before the job's; a later collective on one of the sets is refused, naming what closed it."""
    _kit.remove_all(_close_world, closed_by)


def scope(process_set: Any, api: str) -> _comm.using:
    """The context a collective on `process_set` is issued in (the job's world for the global set)."""
    member = _kit.member_set(process_set, api)
    return _comm.using(None if member is None else member.handle)


def on_process_set(api: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorates a public collective whose `process_set=` argument chooses the world it runs on. A call that
    passes none keeps the world in use: the job's for a user's call, the set's for a call made while one of the
    set's collectives (or its autograd backward) is issued."""
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind_partial(*args, **kwargs)
            if "process_set" not in bound.arguments:
                return fn(*args, **kwargs)
            with scope(bound.arguments["process_set"], api):
                return fn(*args, **kwargs)
        return run
    return decorate


def set_root(root_rank: int, api: str) -> int:
    """A global root rank as the world in use numbers it (its index in the process set in use)."""
    world = _joined.world()
    job = _comm.job()
    if world is job or job is None:
        return root_rank
    found = _kit.registered_with(world)
    if found is None or found.ranks is None:
        raise ValueError("{}: the world in use belongs to no registered process set".format(api))
    return _kit.root_index(found, root_rank, len(found.ranks), api)
