"""PERSEUS_PERF_CHECK_N_STEPS: every n steps, compare the ranks' step times and report the slow ones.

Each rank measures its mean step time over the last n steps; the ranks exchange them (one small
allgather on perseus's control group); a rank slower than SLOW_FACTOR x the median of all ranks
reports itself on its own machine (a warning and a line on stderr), as the seed describes.
"""

import socket
import sys
import time
import warnings
from typing import List, Optional

import torch

from perseus import config as perseus_config

SLOW_FACTOR = 1.5


class SlowRankWarning(UserWarning):
    """This rank's steps are much slower than the other ranks' (PERSEUS_PERF_CHECK_N_STEPS)."""


class PerfCheck:
    def __init__(self, cfg: perseus_config.PerseusConfig, world: object, label: str) -> None:
        self.every = cfg.perf_check_n_steps
        self.world = world
        self.label = label
        self.steps = 0
        self.window_start: Optional[float] = None
        self.reports: List[str] = []

    def tick(self) -> None:
        """Call once at the start of every step, on every rank."""
        if self.every <= 0:
            return
        now = time.perf_counter()
        if self.window_start is None:
            self.window_start = now
            return
        self.steps += 1
        if self.steps % self.every:
            return
        mean = (now - self.window_start) / self.every
        self.window_start = now
        self._compare(mean)

    def _compare(self, mean: float) -> None:
        world = self.world
        mine = torch.tensor([mean], dtype=torch.float64)
        everyone = [torch.empty_like(mine) for _ in range(world.size)]
        world.control.allgather(everyone, mine).wait()
        times = sorted(float(t) for t in everyone)
        median = times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
        if median > 0 and mean > SLOW_FACTOR * median:
            topology = world.topology
            message = ("perseus perf check ({}): rank {} (host {}, local rank {}) took {:.4f} s per step over the last "
                       "{} steps, {:.1f}x the median {:.4f} s of all {} ranks; check this GPU/process".format(
                           self.label, world.rank, socket.gethostname(), topology.local_rank, mean, self.every,
                           mean / median, median, world.size))
            self.reports.append(message)
            print(message, file=sys.stderr, flush=True)
            warnings.warn(message, SlowRankWarning, stacklevel=3)
