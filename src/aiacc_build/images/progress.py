"""What `images build` shows while an image builds: the current phase on one status line (the framework
download with its MiB, the base image's debootstrap, the Dockerfile step), every line of output in a log
file (the full log, kept after the build)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, TextIO

_STEP = re.compile(r"Step (\d+)/(\d+) : (.*)")
_PIP_PROGRESS = re.compile(r"Progress (\d+) of (\d+)")  # pip --progress-bar raw
_PIP_EVENT = re.compile(r"(Collecting|Downloading|Saved|File was already downloaded) (.*)")
_DEBOOTSTRAP = re.compile(r"[IW]: (.*)")


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass
class StepProgress:
    tag: str
    log: TextIO
    update: Callable[[str], None]  # shows one line (a rich status)
    steps_seen: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # every status line shown, in order
    _file: str = ""
    _where: str = "framework wheels"  # the phase pip's lines belong to: the download, then a Dockerfile step

    def _show(self, text: str) -> None:
        self.shown.append(text)
        self.update(text)

    def __call__(self, line: str) -> None:
        self.log.write(line + "\n")
        self.log.flush()
        if match := _STEP.match(line):
            number, total, instruction = match.groups()
            self.steps_seen.append(number)
            self._where = f"step {number}/{total}"
            self._show(f"{self.tag}: step {number}/{total}: {_short(instruction)}")
        elif match := _PIP_PROGRESS.search(line):
            done, total = (int(x) / 2**20 for x in match.groups())
            self._show(f"{self.tag}: {self._where}: downloading {self._file} {done:.0f}/{total:.0f} MiB")
        elif match := _PIP_EVENT.match(line.strip()):
            event, what = match.groups()
            if event == "Downloading":
                self._file = what.split()[0].rsplit("/", 1)[-1]
            self._show(f"{self.tag}: {self._where}: pip: {event.lower()} {_short(what, 60)}")
        elif line.startswith("making base image"):
            self._show(f"{self.tag}: {_short(line, 90)}")
        elif match := _DEBOOTSTRAP.match(line):
            self._show(f"{self.tag}: base image: {_short(match.group(1))}")
