"""Run a long command (pip download, debootstrap) and hand each line of its output to a callback as it
comes, so `images build` shows progress within seconds instead of after minutes."""

from __future__ import annotations

import subprocess
from collections import deque
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Streamed:
    returncode: int
    tail: str  # the last lines of its output (stdout and stderr together), for an error message


def run_streaming(cmd: list[str], on_line: Callable[[str], None] | None = None, env: dict[str, str] | None = None,
                  keep: int = 40) -> Streamed:
    """Run `cmd`, stdout and stderr merged; every non-empty line (a `\\r` also ends one) goes to `on_line`."""
    tail: deque[str] = deque(maxlen=keep)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, bufsize=0) as proc:
        assert proc.stdout is not None
        pending = b""
        while True:
            chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.read(4096)
            if not chunk:
                break
            pending += chunk.replace(b"\r", b"\n")
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace").rstrip()
                if line:
                    tail.append(line)
                    if on_line is not None:
                        on_line(line)
        if pending.strip():
            line = pending.decode(errors="replace").rstrip()
            tail.append(line)
            if on_line is not None:
                on_line(line)
        returncode = proc.wait()
    return Streamed(returncode=returncode, tail="\n".join(tail))
