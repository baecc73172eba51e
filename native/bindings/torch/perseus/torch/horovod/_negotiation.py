"""Which collective runs when: the ranks' records, matched by name, as Horovod's coordinator does.

Every collective call exchanges one fixed-size record per rank (an engine allgather of RECORD_LEN int64): the
operation it asks for (kind, name, dtype, shape, root, op), how the caller waits (MODE) and the digests of this
rank's deferred collectives. Every rank applies the same rule to the same table, so every rank derives the same
list of collectives to run now, in the same order, and the same errors:

- a collective runs once every active rank has it, as its current request or deferred; a joined rank counts as
  having every collective (it takes part with zeros, see collectives.join, or with its own data where it submitted
  the collective before it joined);
- an async call (MODE_DEFER) that the others do not have yet is deferred: its handle is returned and the call
  runs in a later exchange, when the others reach it (Horovod lets ranks submit named collectives in different
  orders, and a rank may issue one before a barrier that another issues after it);
- a blocking call (barrier, object collectives, synchronize() of a deferred handle) exchanges again until its
  collective runs, pausing briefly (without the lock, so that another thread of the process can submit) between
  exchanges that ran nothing; when no rank can defer and nothing runs for STALL_EXCHANGES exchanges in a row, the
  ranks wait for each other: every rank raises the same error naming what each one waits for, instead of hanging;
- poll() of a deferred handle exchanges once (MODE_POLL), so that a rank polling in a loop lets it run.

Names stay in flight from submission until synchronize(): a second collective under a name in flight is refused
(ValueError), as Horovod refuses one it is still processing. When every rank submits the same collective, as a
training loop does, one exchange does it all (the common case costs what it did before deferral existed).
"""

import hashlib
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Set, Tuple

import torch

from perseus.horovod_kit.errors import HorovodCollectiveError
from perseus.horovod_kit.naming import Namer
from perseus.torch import _comm
from perseus.torch import _control as _ops
from perseus.torch.horovod import basics

# Record layout (int64 each)
KIND, JOINED, JOIN_ROUND, DTYPE, NDIM, SHAPE = 0, 1, 2, 3, 4, 5
MAX_DIMS = 8
ROOT = SHAPE + MAX_DIMS  # 13
OP = ROOT + 1
DIGEST = OP + 1
NAME = DIGEST + 1  # 16
NAME_WORDS = 7
KEY = NAME + NAME_WORDS  # 23: the digest of the whole name, what collectives are matched by
MODE = KEY + 1
PENDING_COUNT = MODE + 1
PENDING = PENDING_COUNT + 1  # 26
MAX_DEFERRED = 64  # deferred collectives a rank announces; past that, an async call waits until it runs
RECORD_LEN = PENDING + MAX_DEFERRED  # 90

MODE_DEFER, MODE_BLOCK, MODE_WAIT, MODE_JOINED, MODE_POLL = 0, 1, 2, 3, 4
# A stall is an error only after this many consecutive stalled exchanges (about a second with the pauses between
# them, during which this process's other threads can submit what the others wait for)
STALL_EXCHANGES = 20
STALL_PAUSE_S = 0.005

K_ALLREDUCE, K_ALLGATHER, K_BROADCAST, K_JOIN, K_BARRIER, K_STEP, K_BROADCAST_MANY = 1, 2, 3, 4, 5, 6, 7
K_REDUCESCATTER, K_ALLTOALL = 8, 9
KIND_NAMES = {K_ALLREDUCE: "allreduce", K_ALLGATHER: "allgather", K_BROADCAST: "broadcast", K_JOIN: "join",
              K_BARRIER: "barrier", K_STEP: "optimizer step", K_BROADCAST_MANY: "broadcast_parameters",
              K_REDUCESCATTER: "reducescatter", K_ALLTOALL: "alltoall"}

DTYPES: List[torch.dtype] = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.uint8, torch.int8,
                             torch.int16, torch.int32, torch.int64, torch.bool]


def digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def _name_words(name: str) -> List[int]:
    raw = name.encode()[: NAME_WORDS * 8].ljust(NAME_WORDS * 8, b"\0")
    return [int.from_bytes(raw[i: i + 8], "little", signed=True) for i in range(0, len(raw), 8)]


def _name_of(words: Sequence[int]) -> str:
    raw = b"".join(int(w).to_bytes(8, "little", signed=True) for w in words)
    return raw.rstrip(b"\0").decode(errors="replace")


@dataclass
class Record:
    rank: int
    kind: int
    joined: bool
    join_round: int
    dtype: Optional[torch.dtype]
    shape: Optional[Tuple[int, ...]]
    root: int
    op: int
    digest: int  # what the ranks must agree on: the name's digest, or a layout's (broadcast_parameters, steps)
    name: str
    key: int = 0
    mode: int = MODE_BLOCK
    deferred: Tuple[int, ...] = ()

    def describe(self) -> str:
        what = KIND_NAMES.get(self.kind, "operation {}".format(self.kind))
        return "{} '{}'".format(what, self.name) if self.name else what


def make_row(kind: int, name: str = "", tensor: Optional[torch.Tensor] = None, root: int = -1, op: int = -1,
             digest_: int = 0, joined: bool = False, join_round: int = -1, shape: Optional[Sequence[int]] = None,
             dtype: Optional[torch.dtype] = None) -> List[int]:
    """This rank's record of one collective (without MODE and the deferred digests, set per exchange)."""
    row = [-1] * RECORD_LEN
    row[KIND], row[JOINED], row[JOIN_ROUND] = kind, int(joined), join_round
    if tensor is not None:
        shape, dtype = tuple(tensor.shape), tensor.dtype
    if dtype is not None:
        row[DTYPE] = DTYPES.index(dtype) if dtype in DTYPES else 100 + hash(str(dtype)) % 1000
    if shape is not None:
        if len(shape) > MAX_DIMS:
            raise ValueError("perseus collectives take tensors of at most {} dimensions, '{}' has {}".format(
                MAX_DIMS, name, len(shape)))
        row[NDIM] = len(shape)
        for i, extent in enumerate(shape):
            row[SHAPE + i] = int(extent)
    row[ROOT], row[OP], row[DIGEST] = root, op, digest_
    row[NAME: NAME + NAME_WORDS] = _name_words(name)
    row[KEY] = digest(name)
    return row


def decode(rank: int, row: List[int]) -> Record:
    ndim, code, count = row[NDIM], row[DTYPE], max(0, row[PENDING_COUNT])
    return Record(
        rank=rank, kind=row[KIND], joined=bool(row[JOINED]), join_round=row[JOIN_ROUND],
        dtype=DTYPES[code] if 0 <= code < len(DTYPES) else None,
        shape=tuple(row[SHAPE: SHAPE + ndim]) if ndim >= 0 else None,
        root=row[ROOT], op=row[OP], digest=row[DIGEST], name=_name_of(row[NAME: NAME + NAME_WORDS]),
        key=row[KEY], mode=row[MODE], deferred=tuple(row[PENDING: PENDING + count]))


Started = Tuple[List[Any], Callable[[], Any]]  # the engine works to wait for, and what gives the result


@dataclass
class Collective:
    """One rank's collective call: its record and what starts it once every rank has it (given their records)."""
    row: List[int]
    start: Optional[Callable[[List[Record]], Started]]
    name: str = ""  # the whole name (the record holds its first 56 bytes and its digest)
    world: Any = None
    records: Optional[List[Record]] = None  # every rank's records, once it ran
    started: Optional[Started] = None
    error: Optional[BaseException] = None

    @property
    def key(self) -> int:
        return self.row[KEY]

    @property
    def ran(self) -> bool:
        return self.records is not None or self.error is not None


@dataclass
class _WorldState:
    deferred: List[Collective] = field(default_factory=list)  # submitted here, not yet run, in submission order
    in_flight: Set[str] = field(default_factory=set)  # names submitted and not yet synchronized
    stalled_exchanges: int = 0  # consecutive exchanges that found the ranks stalled (the same count on every rank)


class Negotiator:
    """The record exchanges of one process (per world: the job's, or a process set's)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.rounds = 0
        self.namer = Namer()
        self.set_namers = weakref.WeakKeyDictionary()  # type: weakref.WeakKeyDictionary
        self._states = weakref.WeakKeyDictionary()  # type: weakref.WeakKeyDictionary
        self.joined_hook: Optional[Callable[[List[Record]], None]] = None  # a joined rank's share of a collective

    def auto_name(self, kind: str) -> str:
        """The next unnamed call of `kind` on the world in use: a process set counts its own calls (its members
        call them in one order; the job's other ranks do not)."""
        world = _comm.current()
        if world is None or world is _comm.job():
            return self.namer.name(kind)
        with self.lock:
            namer = self.set_namers.setdefault(world, Namer())
        return namer.name(kind)

    def forget(self) -> None:
        with self.lock:
            self.namer.reset()
            self.set_namers.clear()
            self._states.clear()
            self.rounds = 0

    def _state(self, world: Any) -> _WorldState:
        state = self._states.get(world)
        if state is None:
            state = self._states[world] = _WorldState()
        return state

    # ---- names in flight --------------------------------------------------------------------------

    def claim(self, world: Any, name: str, api: str) -> None:
        """Refuse a name another collective of this rank still holds (submitted, not synchronized)."""
        with self.lock:
            state = self._state(world)
            if name in state.in_flight:
                raise ValueError(
                    "{}: a collective named '{}' is already in flight on this rank; synchronize its handle before "
                    "submitting another under that name, or give each concurrent collective its own name".format(
                        api, name))
            state.in_flight.add(name)

    def release(self, world: Any, names: Sequence[str]) -> None:
        with self.lock:
            state = self._states.get(world)
            if state is not None:
                state.in_flight.difference_update(names)

    # ---- the exchange -----------------------------------------------------------------------------

    def submit(self, collective: Collective, defer: bool) -> None:
        """Run `collective` with the other ranks; with `defer`, leave it deferred when they do not have it yet.
        Its `error` holds what the run raised (the caller raises it)."""
        world = collective.world = basics.world()
        while True:
            with self.lock:
                state = self._state(world)
                can_defer = defer and len(state.deferred) < MAX_DEFERRED
                self._cycle(world, state, MODE_DEFER if can_defer else MODE_BLOCK, collective)
                if collective.ran:
                    return
                if can_defer:
                    state.deferred.append(collective)
                    return
            self._pause(state)

    def exchange(self, kind: int, name: str = "", tensor: Optional[torch.Tensor] = None, root: int = -1,
                 op: int = -1, digest: int = 0, shape: Optional[Sequence[int]] = None,
                 dtype: Optional[torch.dtype] = None) -> List[Record]:
        """A blocking collective's exchange: every rank's record of it, once every rank has it."""
        collective = Collective(make_row(kind, name, tensor, root, op, digest, shape=shape, dtype=dtype), None, name)
        self.submit(collective, defer=False)
        if collective.error is not None:
            raise collective.error
        assert collective.records is not None
        return collective.records

    def wait_for(self, collective: Collective) -> None:
        """Exchange (as MODE_WAIT) on the collective's world until a deferred collective ran."""
        with _comm.using(collective.world):
            while True:
                with self.lock:
                    state = self._state(collective.world)
                    if collective.ran:
                        return
                    self._cycle(collective.world, state, MODE_WAIT, None, waiting=collective)
                    if collective.ran:
                        return
                self._pause(state)

    @staticmethod
    def _pause(state: _WorldState) -> None:
        """Between exchanges that did not run the caller's collective: a short pause without the lock (another thread
        may submit), longer while the ranks stay stalled."""
        time.sleep(STALL_PAUSE_S * min(10, 1 + state.stalled_exchanges))

    def poll(self, collective: Collective) -> None:
        """One exchange (as MODE_POLL) on the collective's world, so that a deferred collective can run while its
        owner polls: it waits for the other ranks to reach a collective call, but never raises a stall."""
        with self.lock:
            state = self._state(collective.world)
            with _comm.using(collective.world):
                if not collective.ran:
                    self._cycle(collective.world, state, MODE_POLL, None, waiting=collective)

    def exchange_joined(self, join_round: int) -> List[Record]:
        """One exchange of a rank inside hvd.join(): runs (with the joined_hook) what the active ranks all have;
        returns the first exchange's records."""
        with self.lock:
            world = basics.world()
            row = make_row(K_JOIN, "join", joined=True, join_round=join_round)
            return self._cycle(world, self._state(world), MODE_JOINED, Collective(row, None, "join", world))

    def _gather(self, world: Any, row: List[int]) -> List[List[int]]:
        record = torch.tensor(row, dtype=torch.int64)
        gathered = [torch.empty_like(record) for _ in range(world.size)]
        _ops.allgather(gathered, record).wait()
        self.rounds += 1
        return [g.tolist() for g in gathered]

    def _cycle(self, world: Any, state: _WorldState, mode: int, current: Optional[Collective],
               waiting: Optional[Collective] = None) -> List[Record]:
        assert current is not None or waiting is not None
        row = list(current.row if current is not None else waiting.row)  # type: ignore[union-attr]
        row[MODE] = mode
        announced = [c.key for c in state.deferred][:MAX_DEFERRED]
        row[PENDING_COUNT] = len(announced)
        row[PENDING: PENDING + len(announced)] = announced
        records = [decode(r, rows) for r, rows in enumerate(self._gather(world, row))]
        verdict = agree(records)
        joined_error = None  # raised once this rank did its part of every exchange of the cycle
        for d in verdict.runnable:
            mine = self._mine(state, current, d, mode)
            if d in verdict.in_one_exchange:
                their = records
            else:
                row_d = list(mine.row) if mine is not None else make_row(K_JOIN, "join", joined=True)
                their = [decode(r, g) for r, g in enumerate(self._gather(world, row_d))]
            try:
                self._run(state, mine, their, mode)
            except BaseException as error:  # only a joined rank's share raises here
                joined_error = joined_error or error
        state.stalled_exchanges = state.stalled_exchanges + 1 if verdict.stalled else 0
        if state.stalled_exchanges >= STALL_EXCHANGES:
            state.stalled_exchanges = 0
            error = HorovodCollectiveError(stall_message(records))
            if current is not None:
                current.error = error
            elif waiting is not None:
                waiting.error = error
                state.deferred.remove(waiting)
            if mode == MODE_JOINED:
                raise error
        if joined_error is not None:
            raise joined_error
        return records

    @staticmethod
    def _mine(state: _WorldState, current: Optional[Collective], d: int, mode: int) -> Optional[Collective]:
        if current is not None and current.key == d and mode in (MODE_DEFER, MODE_BLOCK):
            return current
        for deferred in state.deferred:
            if deferred.key == d:
                return deferred  # a joined rank too: it submitted this one before hvd.join(), with its own data
        if mode == MODE_JOINED:
            return None  # it takes part with zeros
        raise AssertionError("a runnable collective this rank does not have")  # the table says every rank has it

    def _run(self, state: _WorldState, mine: Optional[Collective], records: List[Record], mode: int) -> None:
        if mine is None:  # this rank has joined and has no data of its own for this collective
            assert self.joined_hook is not None
            self.joined_hook(records)
            return
        if mine in state.deferred:
            state.deferred.remove(mine)
        mine.records = records
        if mine.start is None:
            return
        try:
            mine.started = mine.start(records)
        except BaseException as error:  # raised where the caller waits for it (submit or synchronize)
            mine.error = error


@dataclass
class Verdict:
    """What every rank concludes from one exchange's records (the same on every rank)."""
    runnable: List[int]  # keys every active rank has, in the order they run
    in_one_exchange: List[int]  # of those, the ones every active rank asked for now (their records are at hand)
    stalled: bool  # nothing runs and no rank can defer: the ranks wait for each other


def agree(records: List[Record]) -> Verdict:
    """The rule of this module, on one exchange's records: a pure function of them."""
    active = [r for r in records if r.mode != MODE_JOINED]
    if not active:
        return Verdict([], [], False)
    has = [_has(r) for r in active]
    runnable = [d for d in has[0] if all(d in h for h in has[1:])]
    # a joined rank that deferred the collective before it joined takes part with its own record: a second exchange
    joined_own = {d for r in records if r.mode == MODE_JOINED for d in r.deferred}
    at_hand = [d for d in runnable
               if d not in joined_own and all(r.mode in (MODE_DEFER, MODE_BLOCK) and r.key == d for r in active)]
    stalled = not runnable and not any(r.mode in (MODE_DEFER, MODE_POLL) for r in active)
    return Verdict(runnable, at_hand, stalled)


def _has(record: Record) -> List[int]:
    """The keys a rank can run now: its deferred ones in submission order, then its current request."""
    found = list(record.deferred)
    if record.mode in (MODE_DEFER, MODE_BLOCK) and record.key not in found:
        found.append(record.key)
    return found


def stall_message(records: List[Record]) -> str:
    words = []
    for r in records:
        if r.mode == MODE_JOINED:
            continue
        if r.mode == MODE_WAIT:
            words.append("rank {} waits for the {} it submitted".format(r.rank, r.describe()))
        else:
            words.append("rank {} calls {}".format(r.rank, r.describe()))
    return ("the ranks wait for collectives the others did not submit: {}; every rank must submit the same "
            "collectives (by name; unnamed ones in the same order)".format("; ".join(words)))
