"""What `images build` shows while an image builds: the current step on one status line, every line
of the builder's output in a log file (the full log, kept after the build)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, TextIO

_STEP = re.compile(r"Step (\d+)/(\d+) : (.*)")


@dataclass
class StepProgress:
    tag: str
    log: TextIO
    update: Callable[[str], None]  # shows one line (a rich status)
    steps_seen: list[str] = field(default_factory=list)

    def __call__(self, line: str) -> None:
        self.log.write(line + "\n")
        self.log.flush()
        match = _STEP.match(line)
        if match is None:
            return
        number, total, instruction = match.groups()
        self.steps_seen.append(number)
        short = instruction if len(instruction) <= 70 else instruction[:67] + "..."
        self.update(f"{self.tag}: step {number}/{total}: {short}")
