"""PERSEUS_PERF_CHECK_N_STEPS: every n steps, compare the ranks' step times and report the slow ones.

Each rank measures, per step, the time it worked on its own (from the end of the previous step's
gradient reduction to the moment its last gradient of this step is ready), averages it over n
steps, and the ranks exchange the averages (one small allgather through the engine); a
rank slower than SLOW_FACTOR x the median reports itself on its own machine (a warning and a line
on stderr), as the seed describes.
"""

import socket
import sys
import warnings
from typing import List, Optional

import torch

from perseus import config as perseus_config

SLOW_FACTOR = 1.5


class SlowRankWarning(UserWarning):
    """This rank's steps are much slower than the other ranks' (PERSEUS_PERF_CHECK_N_STEPS)."""


class PerfCheck:
    """Call `local(seconds)` once per step on every rank, with the time this rank worked on its own.

    Local time excludes waiting for the other ranks (which is the same for everyone: the slowest
    rank sets it), so it is what tells a slow GPU or process apart."""

    def __init__(self, cfg: perseus_config.PerseusConfig, world: object, label: str) -> None:
        self.every = cfg.perf_check_n_steps
        self.world = world
        self.label = label
        self.samples: List[float] = []
        self.reports: List[str] = []

    @property
    def enabled(self) -> bool:
        return self.every > 0

    def local(self, seconds: Optional[float]) -> None:
        if self.every <= 0 or seconds is None:
            return
        self.samples.append(seconds)
        if len(self.samples) == self.every:
            mean = sum(self.samples) / len(self.samples)
            self.samples = []
            self._compare(mean)

    def _compare(self, mean: float) -> None:
        from perseus.torch import _control

        world = self.world
        work = _control.allgather_flat(torch.tensor([mean], dtype=torch.float64))
        work.wait()
        assert work.result is not None
        times = sorted(float(t) for t in work.result)
        half = len(times) // 2
        median = times[half] if len(times) % 2 else 0.5 * (times[half - 1] + times[half])
        if median > 0 and mean > SLOW_FACTOR * median:
            message = ("perseus perf check ({}): rank {} (host {}, local rank {}) worked {:.4f} s per step on its own "
                       "over the last {} steps, {:.1f}x the median {:.4f} s of all {} ranks; check this GPU/process"
                       .format(self.label, world.rank, socket.gethostname(), world.local_rank, mean, self.every,
                               mean / median, median, world.size))
            self.reports.append(message)
            print(message, file=sys.stderr, flush=True)
            warnings.warn(message, SlowRankWarning, stacklevel=3)
