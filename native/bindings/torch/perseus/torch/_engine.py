"""The gradient engine shared by the DDP hook and hvd.DistributedOptimizer.

One fusion plan per model: the native planner (PERSEUS_ALLREDUCE_FUSION) splits the model's
gradients, in the order backward produces them, into fusion groups; each group is ONE collective per
step. With automatic fusion (the variable unset) a gradient larger than PARTITION_BYTES enters the
planner as near-equal slices of at most that size (tensor partitioning, as BytePS does): the first
slice of a large gradient leaves after a fraction of its compression, and the step's last collective,
whose decompression nothing overlaps, stays small. A group is launched when all its gradients are ready and every earlier group was launched, so
every rank issues the same collectives in the same order. Groups are spread round-robin over the
streams in use (up to PERSEUS_ALLREDUCE_STREAMS; _stream_tuner.py chooses how many when the variable
is unset); a stream has its own process groups and threads.

On one level on the CPU, the thread that makes the group's last gradient ready (backward's) runs the
group's pipeline up to its collective (pack, compress) and issues the collective without waiting:
the wire waits for that group, backward can wait instead, and Gloo carries collectives back to back.
The stream's finisher thread waits for the collective and completes the group (decompress, unpack).
Two levels (several collectives per group, each issued after the one before) and CUDA tensors run
the whole pipeline in the stream's worker thread while backward goes on.

Per group and step:
  pack the gradients into one fp32 buffer
  accumulate locally on all but every PERSEUS_ACCUMULATE_N_STEPS-th step (no collective)
  gossip-downsample to 1 element in PERSEUS_DOWNSAMPLE_N_ELEMENTS (residual with PERSEUS_GRADIENT_MOMENTUM)
  reduce on the wire policy: fp16 (scaled by PERSEUS_ALLREDUCE_GRADIENT_SCALE) or fp32, one level or
    two (reduce inside the node, allreduce among node leaders, broadcast inside the node)
  decompress = unscale and average; PERSEUS_ALLREDUCE_NANCHECK turns a non-finite result into an error
    naming the parameters
  unpack into the gradients
"""

import collections
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

import torch
import torch.distributed as dist

from perseus import config as perseus_config
from perseus.torch import _exit, _kernels
from perseus.torch._stream_tuner import StreamTuner
from perseus.torch._world import PerseusWorld, StreamGroups


class NonFiniteGradientError(RuntimeError):
    """PERSEUS_ALLREDUCE_NANCHECK=1 found inf/NaN in the reduced gradients (the message names the parameters)."""


def _nbytes(numel: int, dtype: torch.dtype) -> int:
    return numel * torch.empty((), dtype=dtype).element_size()


@dataclass(frozen=True)
class Entry:
    """One gradient the engine reduces."""

    name: str
    numel: int
    dtype: torch.dtype
    device: torch.device

    @property
    def nbytes(self) -> int:
        return _nbytes(self.numel, self.dtype)


@dataclass(frozen=True)
class WirePolicy:
    """What crosses the network: fp16 or the gradient's dtype, on one level or two."""

    hierarchical: bool
    intra_fp16: bool  # inside a node (and on the single level of a one-node job)
    inter_fp16: bool  # between nodes (and on the single level of a one-rank-per-node job)
    scale: float

    @property
    def flat_fp16(self) -> bool:
        return self.intra_fp16 and self.inter_fp16

    def describe(self) -> str:
        def dt(fp16: bool) -> str:
            return "fp16" if fp16 else "fp32"
        if self.hierarchical:
            return "two levels: {} inside nodes, {} between nodes".format(dt(self.intra_fp16), dt(self.inter_fp16))
        return "one level: {}".format(dt(self.intra_fp16 and self.inter_fp16))


def wire_policy(cfg: perseus_config.PerseusConfig, num_nodes: int, local_size: int,
                force_fp16: bool = False) -> WirePolicy:
    """The wire policy of PERSEUS_ALLREDUCE_DTYPE / _MODE for this job's shape.

    force_fp16 (hvd.DistributedOptimizer(compression=hvd.Compression.fp16)) puts fp16 on every level."""
    hierarchical = cfg.hierarchical(num_nodes, local_size)
    intra = cfg.compresses_inside_node() or force_fp16
    inter = cfg.compresses_between_nodes() or force_fp16
    if not hierarchical and intra != inter:
        # one level: it is all inside one node, or all between nodes (one rank per node)
        intra = inter = (intra if num_nodes <= 1 else inter)
    if not (intra or inter):
        perseus_config.warn_not_honoured(
            "PERSEUS_ALLREDUCE_GRADIENT_SCALE",
            "the gradient scale applies to fp16 compression only, and PERSEUS_ALLREDUCE_DTYPE=1 sends the gradients "
            "uncompressed", cfg)
    return WirePolicy(hierarchical, intra, inter, cfg.gradient_scale)


@dataclass
class FusionGroup:
    index: int
    members: List[int]
    offsets: List[int]
    numel: int
    dtype: torch.dtype
    device: torch.device
    stream: int  # its stream when every stream is in use (the engine uses index % streams in use)
    flat: Optional[torch.Tensor] = None
    half: Optional[torch.Tensor] = None
    accumulated: Optional[torch.Tensor] = None
    residual: Optional[torch.Tensor] = None
    sent: Optional[torch.Tensor] = None

    def buffer(self, attr: str, numel: int, dtype: torch.dtype) -> torch.Tensor:
        current = getattr(self, attr)
        if current is None or current.numel() != numel or current.dtype != dtype:
            current = torch.empty(numel, dtype=dtype, device=self.device)
            setattr(self, attr, current)
        return current


AUTO_GROUP_BYTES = 4 << 20
STOP_SECONDS = 10.0  # how long shutdown() waits for the stream threads when the caller gives no deadline
PARTITION_BYTES = AUTO_GROUP_BYTES


@dataclass(frozen=True)
class Part:
    """What the planner places: a whole gradient, or a slice of a large one (elements, flattened)."""

    entry: int
    offset: int
    numel: int
    dtype: torch.dtype
    device: torch.device

    @property
    def nbytes(self) -> int:
        return _nbytes(self.numel, self.dtype)


def partition(entries: Sequence[Entry], fusion: Optional[int]) -> List[Part]:
    """The planner's units: with automatic fusion (None) every gradient above PARTITION_BYTES is cut into
    near-equal slices of at most that size; an explicit PERSEUS_ALLREDUCE_FUSION plans whole gradients."""
    parts: List[Part] = []
    for index, entry in enumerate(entries):
        pieces = 1 if fusion is not None else max(1, -(-entry.nbytes // PARTITION_BYTES))
        base, extra = divmod(entry.numel, pieces)
        offset = 0
        for k in range(pieces):
            numel = base + (1 if k < extra else 0)
            parts.append(Part(index, offset, numel, entry.dtype, entry.device))
            offset += numel
    return parts


def native_plan(sizes: Sequence[int], fusion: Optional[int], streams: int) -> List[List[int]]:
    """The native plan of PERSEUS_ALLREDUCE_FUSION. Unset (automatic): the granularity that gives groups of
    about AUTO_GROUP_BYTES, or the native automatic one if that is finer. Groups of a few MiB let the first
    group leave while backward still runs and let the streams overlap one group's transfer with another's
    compression; fewer, larger groups (the native automatic choice, 32 MiB) wait for more of backward."""
    plan = _kernels.plan_buckets(sizes, fusion)
    if fusion is None and plan:
        wanted = min(128, max(1, -(-sum(sizes) // AUTO_GROUP_BYTES)))
        if wanted > len(plan):
            plan = _kernels.plan_buckets(sizes, wanted)
    return plan


def plan_groups(entries: Sequence[Any], fusion: Optional[int], streams: int) -> List[FusionGroup]:
    """Fusion groups of `entries` (Entry or Part, in their order): the native plan, separately for each dtype
    and device."""
    classes: Dict[Any, List[int]] = {}
    for i, e in enumerate(entries):
        classes.setdefault((e.dtype, str(e.device)), []).append(i)
    raw: List[List[int]] = []
    for indices in classes.values():
        plan = native_plan([entries[i].nbytes for i in indices], fusion, streams)
        raw.extend([[indices[j] for j in bucket] for bucket in plan])
    raw.sort(key=lambda members: members[0])  # launch order: the order gradients become ready
    groups = []
    for g, members in enumerate(raw):
        offsets, total = [], 0
        for m in members:
            offsets.append(total)
            total += entries[m].numel
        first = entries[members[0]]
        groups.append(FusionGroup(g, members, offsets, total, first.dtype, first.device, g % max(1, streams)))
    return groups


def adjacent_view(tensors: Sequence[torch.Tensor]) -> Optional[torch.Tensor]:
    """A 1-D view over `tensors` when they lie back to back in one storage (in this order), else None."""
    first = tensors[0]
    storage = first.untyped_storage() if hasattr(first, "untyped_storage") else first.storage()
    expected = first.data_ptr()
    total = 0
    for t in tensors:
        if not t.is_contiguous() or t.dtype != first.dtype or t.device != first.device or t.data_ptr() != expected:
            return None
        expected += t.numel() * t.element_size()
        total += t.numel()
    end = (first.storage_offset() + total) * first.element_size()
    # torch < 1.11: typed storages, sized in elements
    nbytes = storage.nbytes() if hasattr(storage, "nbytes") else storage.size() * storage.element_size()
    if end > nbytes:
        return None
    return first.new_empty(0).set_(storage, first.storage_offset(), (total,), (1,))


GroupCallback = Callable[[Optional[BaseException]], None]


class _Step:
    """What one step (one backward pass, or one optimizer step) has gathered so far."""

    def __init__(self, number: int, communicate: bool, groups: int, streams: int) -> None:
        self.number = number
        self.communicate = communicate
        self.reported: Set[int] = set()  # indices of the gradients reported so far
        # a non-contiguous partitioned gradient is reduced in a contiguous copy, copied back when its groups
        # are done: gradient index -> (its tensor, the copy, groups left)
        self.copies: Dict[int, Any] = {}
        self.streams = streams  # streams in use for this step's groups
        self.first_launch: Optional[float] = None  # when its first group's pipeline started
        self.tensors: Dict[int, torch.Tensor] = {}
        self.events: Dict[int, Any] = {}
        self.arrived = [0] * groups
        self.next_launch = 0
        self.done = [False] * groups
        self.errors: List[BaseException] = []
        self.callbacks: Dict[int, List[GroupCallback]] = {}
        self.finished = threading.Event()
        self.remaining = groups
        if groups == 0:
            self.finished.set()


class Engine:
    """Reduces the gradients of `entries` once per step, as described in the module docstring."""

    def __init__(self, entries: Sequence[Entry], world: PerseusWorld, cfg: perseus_config.PerseusConfig,
                 policy: WirePolicy, average: bool = True, label: str = "model") -> None:
        self.entries = list(entries)
        self.world = world
        self.cfg = cfg
        self.policy = policy
        self.average = average
        self.label = label
        self.parts = partition(self.entries, cfg.fusion)
        self.parts_of: List[List[int]] = [[] for _ in self.entries]
        for p, part in enumerate(self.parts):
            self.parts_of[part.entry].append(p)
        self.groups = plan_groups(self.parts, cfg.fusion, len(world.streams))
        self.group_of: List[int] = [0] * len(self.parts)  # per part
        for group in self.groups:
            for m in group.members:
                self.group_of[m] = group.index
        self.groups_of_entry: List[List[int]] = [sorted({self.group_of[p] for p in parts}) for parts in self.parts_of]
        self.collectives = 0  # collectives issued by this rank so far (all levels)
        self.last_finished_at: Optional[float] = None  # when the last step's reduction finished
        self._lock = threading.Lock()
        self._launch_lock = threading.RLock()
        self._launches: "collections.deque[Any]" = collections.deque()
        self._steps_started = 0
        self._comm_steps = 0
        self._step: Optional[_Step] = None
        self._workers = [_StreamWorker(self, s, groups) for s, groups in enumerate(world.streams)]
        _exit.track(self)
        self.tuner = StreamTuner(len(world.streams), fixed=cfg.is_set("PERSEUS_ALLREDUCE_STREAMS"))
        self.streams_per_step: List[int] = []  # streams in use by each step begun so far
        if cfg.downsample_n_elements == 1 and cfg.is_set("PERSEUS_GRADIENT_MOMENTUM"):
            perseus_config.warn_not_honoured(
                "PERSEUS_GRADIENT_MOMENTUM",
                "the momentum applies to the residual of gossip downsampling, which PERSEUS_DOWNSAMPLE_N_ELEMENTS=1 "
                "turns off", cfg)

    # ---- step protocol -------------------------------------------------------------------------
    def begin_step(self, force_communicate: bool = False) -> _Step:
        """Start a step; the previous one must be finished."""
        self.tuner.before_step(self._agree)
        with self._lock:
            current = self._step
            if current is not None and not current.finished.is_set():
                if current.tensors:
                    raise RuntimeError("perseus: a new gradient step began before the previous one finished")
                self._steps_started -= 1  # nothing was reported yet: this step replaces it
                self.streams_per_step.pop()
            n = self.cfg.accumulate_n_steps
            communicate = force_communicate or (self._steps_started % n) == n - 1
            self._steps_started += 1
            self._step = _Step(self._steps_started - 1, communicate, len(self.groups), self.tuner.active)
            self.streams_per_step.append(self.tuner.active)
            return self._step

    def _agree(self, values: List[float]) -> List[float]:
        """The element-wise maximum of `values` over all ranks (one small collective on the control group)."""
        tensor = torch.tensor(values, dtype=torch.float64)
        self.world.control.allreduce(tensor, op=dist.ReduceOp.MAX).wait()
        return [float(v) for v in tensor]

    @property
    def step(self) -> _Step:
        if self._step is None:
            return self.begin_step()
        return self._step

    @property
    def next_step_communicates(self) -> bool:
        n = self.cfg.accumulate_n_steps
        return (self._steps_started % n) == n - 1

    def groups_of(self, entries: Sequence[int]) -> List[int]:
        """The fusion groups holding (parts of) these gradients."""
        return sorted({g for i in entries for g in self.groups_of_entry[i]})

    def reported(self, index: int) -> bool:
        """Whether gradient `index` was reported in the current step."""
        return index in self.step.reported

    def on_groups_done(self, groups: Sequence[int], callback: GroupCallback) -> None:
        """Call `callback(error or None)` once all `groups` of the current step are done."""
        step = self.step
        pending = {"left": len(set(groups)), "error": None}
        lock = threading.Lock()

        def one_done(error: Optional[BaseException]) -> None:
            with lock:
                if error is not None and pending["error"] is None:
                    pending["error"] = error
                pending["left"] -= 1
                last = pending["left"] == 0
            if last:
                callback(pending["error"])

        if not groups:
            callback(None)
            return
        with self._lock:
            already = []
            for g in set(groups):
                if step.done[g]:
                    already.append(g)
                else:
                    step.callbacks.setdefault(g, []).append(one_done)
        for _ in already:
            one_done(step.errors[0] if step.errors else None)

    def ready(self, index: int, tensor: torch.Tensor) -> None:
        """Gradient `index` of this step is final in `tensor` (the result is written back into it)."""
        step = self.step
        launch = []
        parts = self.parts_of[index]
        flat = None
        copied = False
        if len(parts) > 1:
            copied = not tensor.is_contiguous()
            flat = (tensor.contiguous() if copied else tensor).view(-1)
        with self._lock:
            if index in step.reported:
                raise RuntimeError("perseus: gradient '{}' was reported twice in one step".format(self.entries[index].name))
            step.reported.add(index)
            if copied:
                step.copies[index] = (tensor, flat, set(self.groups_of_entry[index]))
            event = None
            if tensor.is_cuda:
                event = torch.cuda.Event()
                event.record()
            for p in parts:
                part = self.parts[p]
                step.tensors[p] = tensor if flat is None else flat[part.offset: part.offset + part.numel]
                if event is not None:
                    step.events[p] = event
                step.arrived[self.group_of[p]] += 1
            while step.next_launch < len(self.groups) and \
                    step.arrived[step.next_launch] == len(self.groups[step.next_launch].members):
                if step.first_launch is None:
                    step.first_launch = time.perf_counter()
                launch.append(self.groups[step.next_launch])
                self._launches.append((self.groups[step.next_launch], step))
                step.next_launch += 1
        if not launch:
            return
        with self._launch_lock:  # every rank issues the collectives in the order of the plan
            while True:
                with self._lock:
                    if not self._launches:
                        return
                    group, launched_step = self._launches.popleft()
                self._workers[group.index % launched_step.streams].launch(group, launched_step)

    def flush(self, zeros_for_missing: bool = True) -> None:
        """Report every gradient not reported this step (as zeros), so that all groups launch."""
        step = self.step
        for i, e in enumerate(self.entries):
            if i not in step.reported:
                self.ready(i, torch.zeros(e.numel, dtype=e.dtype, device=e.device))

    def wait(self) -> None:
        """Block until every group of the current step finished; raise its first error."""
        step = self.step
        step.finished.wait()
        if step.errors:
            raise step.errors[0]

    # ---- called by the stream workers ----------------------------------------------------------
    def _group_done(self, group: FusionGroup, step: _Step, error: Optional[BaseException]) -> None:
        with self._lock:
            step.done[group.index] = True
            if error is not None:
                step.errors.append(error)
            copied_back = []
            for index, (tensor, flat, left) in list(step.copies.items()):
                left.discard(group.index)
                if not left:
                    copied_back.append((tensor, flat))
                    del step.copies[index]
            callbacks = step.callbacks.pop(group.index, [])
            step.remaining -= 1
            finished = step.remaining == 0
            if finished and step.communicate:
                self._comm_steps += 1
                if step.first_launch is not None and not step.errors:
                    self.tuner.record(time.perf_counter() - step.first_launch)
        for tensor, flat in copied_back:
            tensor.copy_(flat.view(tensor.shape))
        if finished:  # before the callbacks: they release whoever starts the next step
            self.last_finished_at = time.perf_counter()
            step.finished.set()
        for callback in callbacks:
            callback(error)

    def local_seconds(self) -> Optional[float]:
        """Time since the previous step's reduction finished (this rank's own work since then)."""
        return None if self.last_finished_at is None else time.perf_counter() - self.last_finished_at

    @property
    def comm_steps(self) -> int:
        return self._comm_steps

    def nonfinite_names(self, group: FusionGroup, flat: torch.Tensor) -> List[str]:
        names: List[str] = []
        for m, offset in zip(group.members, group.offsets):
            piece = flat[offset: offset + self.parts[m].numel]
            name = self.entries[self.parts[m].entry].name
            if name not in names and not bool(torch.isfinite(piece).all()):
                names.append(name)
        return names

    def shutdown(self, deadline: Optional[float] = None) -> None:
        """Stop the stream threads; with `deadline` (time.monotonic()), give up waiting for them at it."""
        deadline = time.monotonic() + STOP_SECONDS if deadline is None else deadline
        for worker in self._workers:
            worker.stop(deadline)


class _StreamWorker:
    """One communication stream: a worker thread that runs groups' pipelines in submission order, and a
    finisher thread that completes the groups whose collective was issued without waiting for it (in
    issue order), so that the next group's pack and compression overlap this group's transfer."""

    def __init__(self, engine: Engine, index: int, groups: StreamGroups) -> None:
        self.engine = engine
        self.index = index
        self.groups = groups
        self.queue: "queue.Queue[Any]" = queue.Queue()
        self.finishing: "queue.Queue[Any]" = queue.Queue()
        self.thread: Optional[threading.Thread] = None
        self.finisher: Optional[threading.Thread] = None
        self.cuda_stream: Optional[Any] = None

    def launch(self, group: FusionGroup, step: _Step) -> None:
        """Start the group's pipeline: on one level on the CPU right here, up to its collective (the caller
        is backward's thread: the wire waits for this group, backward can wait instead); else in the thread."""
        if group.device.type == "cuda" or self.engine.policy.hierarchical:
            self.submit(group, step)
            return
        error: Optional[BaseException] = None
        finish: Optional[Callable[[], None]] = None
        try:
            finish = self._run(group, step)
        except BaseException as caught:
            error = caught
        self._hand_on(group, step, finish, error)

    def submit(self, group: FusionGroup, step: _Step) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._loop, name="perseus-stream-{}".format(self.index), daemon=True)
            self.thread.start()
        self.queue.put((group, step))

    def stop(self, deadline: float) -> None:
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join(timeout=max(0.0, deadline - time.monotonic()))
            self.thread = None
        if self.finisher is not None:
            self.finishing.put(None)
            self.finisher.join(timeout=max(0.0, deadline - time.monotonic()))
            self.finisher = None

    def _loop(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            group, step = item
            error: Optional[BaseException] = None
            finish: Optional[Callable[[], None]] = None
            try:
                if group.device.type == "cuda":
                    self._run_cuda(group, step)
                else:
                    finish = self._run(group, step)
            except BaseException as caught:  # handed to whoever waits for the step
                error = caught
            self._hand_on(group, step, finish, error)

    def _hand_on(self, group: FusionGroup, step: _Step, finish: Optional[Callable[[], None]],
                 error: Optional[BaseException]) -> None:
        if finish is None:
            self.engine._group_done(group, step, error)
            return
        if self.finisher is None:
            self.finisher = threading.Thread(target=self._finish_loop, name="perseus-finish-{}".format(self.index),
                                             daemon=True)
            self.finisher.start()
        self.finishing.put((group, step, finish))

    def _finish_loop(self) -> None:
        while True:
            item = self.finishing.get()
            if item is None:
                return
            group, step, finish = item
            error: Optional[BaseException] = None
            try:
                finish()
            except BaseException as caught:
                error = caught
            self.engine._group_done(group, step, error)

    def _run_cuda(self, group: FusionGroup, step: _Step) -> None:
        if self.cuda_stream is None:
            self.cuda_stream = torch.cuda.Stream(device=group.device)
        with torch.cuda.device(group.device), torch.cuda.stream(self.cuda_stream):
            for m in group.members:
                event = step.events.get(m)
                if event is not None:
                    self.cuda_stream.wait_event(event)
            finish = self._run(group, step)
            if finish is not None:
                finish()
            self.cuda_stream.synchronize()

    # ---- the pipeline ----------------------------------------------------------------------------
    def _run(self, group: FusionGroup, step: _Step) -> Optional[Callable[[], None]]:
        """The group's pipeline up to its collective; returns the rest of it (None: nothing is left)."""
        engine, cfg = self.engine, self.engine.cfg
        tensors = [step.tensors[m] for m in group.members]
        flat = adjacent_view(tensors)  # DDP's bucket views usually are: no copy at all then
        aliased = flat is not None
        if flat is None:
            flat = group.buffer("flat", group.numel, group.dtype)
            _kernels.pack(tensors, flat)
        if cfg.accumulate_n_steps > 1:
            accumulated = group.buffer("accumulated", group.numel, group.dtype)
            if step.number % cfg.accumulate_n_steps == 0:
                accumulated.zero_()
            if not step.communicate:
                accumulated.add_(flat)
                return None  # local step: the gradients stay as they are, nothing crosses the network
            flat.add_(accumulated)
        n = cfg.downsample_n_elements
        payload = flat
        comm_step = engine.comm_steps  # the same for every group of this step: it grows when a step ends
        if n > 1:
            count = _kernels.downsample_count(group.numel, n, comm_step)
            residual = group.residual
            if residual is None:
                residual = group.buffer("residual", group.numel, group.dtype).zero_()
            payload = group.buffer("sent", count, group.dtype)
            _kernels.downsample_gather_momentum(flat, residual, payload, n, comm_step, cfg.gradient_momentum)

        def finish(nonfinite: int) -> None:
            if n > 1:
                _kernels.downsample_scatter(payload, flat, n, comm_step, zero_unsent=True)
            if cfg.nancheck and nonfinite:
                names = engine.nonfinite_names(group, flat)
                raise NonFiniteGradientError(
                    "PERSEUS_ALLREDUCE_NANCHECK: the reduced gradient of {} is not finite (inf or NaN) in {} element(s) "
                    "of {}: {}. A loss that grows too large can overflow fp16 after the gradient scale: lower "
                    "PERSEUS_ALLREDUCE_GRADIENT_SCALE (now {:g}) or find the layer that produces it".format(
                        engine.label, nonfinite, "parameter" if len(names) == 1 else "parameters", ", ".join(names),
                        engine.policy.scale))
            if not aliased:
                _kernels.unpack(flat, tensors)

        if not engine.policy.hierarchical:
            complete = self._allreduce_one_level(group, payload)
            return lambda: finish(complete())
        finish(self._reduce_two_levels(group, payload))
        return None

    def _allreduce_one_level(self, group: FusionGroup, payload: torch.Tensor) -> Callable[[], int]:
        """Start averaging `payload` over all ranks (one collective); returns what completes it in place and
        returns its non-finite count."""
        engine = self.engine
        world_size = engine.world.size if engine.average else 1
        if payload.dtype == torch.float32 and engine.policy.flat_fp16:
            scale = engine.policy.scale
            half = group.buffer("half", payload.numel(), torch.float16)
            _kernels.compress(payload, half, scale)
            work = self._start(self.groups.everyone.allreduce(half))

            def complete_fp16() -> int:
                work.wait()
                return _kernels.decompress(half, payload, scale, world_size)
            return complete_fp16
        work = self._start(self.groups.everyone.allreduce(payload))

        def complete_plain() -> int:
            work.wait()
            return self._finish_plain(payload, world_size)
        return complete_plain

    def _reduce_two_levels(self, group: FusionGroup, payload: torch.Tensor) -> int:
        """Average `payload` over all ranks in place on two levels; returns its non-finite count."""
        engine = self.engine
        policy = engine.policy
        world_size = engine.world.size if engine.average else 1
        compressible = payload.dtype == torch.float32
        topology = engine.world.topology
        node, leaders = self.groups.node, self.groups.leaders
        assert node is not None
        leader = topology.node_members(topology.node)[0]
        if compressible and policy.intra_fp16:
            half = group.buffer("half", payload.numel(), torch.float16)
            _kernels.compress(payload, half, policy.scale)
            self._wait(node.reduce(half, leader))
            if leaders is not None:
                self._wait(leaders.allreduce(half))
            self._wait(node.broadcast(half, leader))
            return _kernels.decompress(half, payload, policy.scale, world_size)
        self._wait(node.reduce(payload, leader))
        nonfinite = 0
        if leaders is not None:
            if compressible and policy.inter_fp16:
                half = group.buffer("half", payload.numel(), torch.float16)
                _kernels.compress(payload, half, policy.scale)
                self._wait(leaders.allreduce(half))
                nonfinite = _kernels.decompress(half, payload, policy.scale, world_size)
            else:
                self._wait(leaders.allreduce(payload))
                nonfinite = self._finish_plain(payload, world_size)
        self._wait(node.broadcast(payload, leader))
        if leaders is None and engine.cfg.nancheck:
            nonfinite = int((~torch.isfinite(payload)).sum())
        return nonfinite

    def _finish_plain(self, payload: torch.Tensor, world_size: int) -> int:
        if world_size > 1:
            payload.div_(world_size)
        if self.engine.cfg.nancheck and payload.is_floating_point():
            return int((~torch.isfinite(payload)).sum())
        return 0

    def _start(self, work: Any) -> Any:
        self.engine.collectives += 1
        return work

    def _wait(self, work: Any) -> None:
        self._start(work).wait()
