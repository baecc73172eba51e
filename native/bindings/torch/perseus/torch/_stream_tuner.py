"""How many of the PERSEUS_ALLREDUCE_STREAMS streams carry the fusion groups.

PERSEUS_ALLREDUCE_STREAMS is an upper limit. Several streams pay where one connection cannot fill the
network (a cloud VPC caps each TCP flow well below the instance's bandwidth); where one connection
fills it, groups on several streams share the link, finish together at the end of the step and
their decompressions add up there, after the last byte. Which case holds depends on the network, so
when the variable is unset the engine measures: it runs the first communicating steps on one stream,
the next ones on all of them, and keeps the faster (the span from a step's first collective to its
last group done, median of a few steps). The ranks agree on the choice through one small allreduce
(the slowest rank's spans count), so every rank issues every group on the same stream. A value the
user sets is used as it is, from the first step.
"""

import statistics
from typing import Callable, Dict, List, Sequence

Agree = Callable[[List[float]], List[float]]  # the element-wise maximum over all ranks

WARMUP_STEPS = 1  # a candidate's first step (new connections) is not measured
MEASURED_STEPS = 3
MARGIN = 0.03  # more streams must be this much faster to be kept


class StreamTuner:
    """Chooses the number of streams in use; every step uses one count from its start to its end."""

    def __init__(self, limit: int, fixed: bool) -> None:
        self.limit = max(1, limit)
        self.candidates: List[int] = [self.limit] if fixed or self.limit == 1 else [1, self.limit]
        self.active = self.candidates[0]
        self.decided = len(self.candidates) == 1
        self.spans: Dict[int, List[float]] = {c: [] for c in self.candidates}
        self.medians: Dict[int, float] = {}
        self._steps_on_active = 0

    def stream_of(self, group_index: int) -> int:
        return group_index % self.active

    def record(self, span: float) -> None:
        """A communicating step finished: `span` seconds from its first collective to its last group done."""
        if self.decided:
            return
        self._steps_on_active += 1
        if self._steps_on_active > WARMUP_STEPS:
            self.spans[self.active].append(span)

    def before_step(self, agree: Agree) -> None:
        """At a step boundary (the previous step finished): move on to the next candidate, or decide."""
        if self.decided or len(self.spans[self.active]) < MEASURED_STEPS:
            return
        position = self.candidates.index(self.active)
        if position + 1 < len(self.candidates):
            self.active = self.candidates[position + 1]
            self._steps_on_active = 0
            return
        agreed = agree([statistics.median(self.spans[c]) for c in self.candidates])
        self.medians = dict(zip(self.candidates, agreed))
        self.active = choose(self.candidates, agreed)
        self.decided = True

    def describe(self) -> str:
        if not self.medians:
            return "{} stream(s){}".format(self.active, "" if self.decided else " (measuring)")
        spans = ", ".join("{}: {:.1f} ms".format(c, m * 1e3) for c, m in sorted(self.medians.items()))
        return "{} stream(s) (median reduction span per step with {})".format(self.active, spans)


def choose(candidates: Sequence[int], medians: Sequence[float]) -> int:
    """The fewest streams unless more are faster by MARGIN."""
    best, best_span = candidates[0], medians[0]
    for count, span in zip(candidates[1:], medians[1:]):
        if span < best_span * (1.0 - MARGIN):
            best, best_span = count, span
    return best
