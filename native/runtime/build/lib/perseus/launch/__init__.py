"""Launch-environment detection: who am I in this job (rank, size, local rank, ...) and who said so.

`detect()` reads the variables (and appended argv) that launchers set. Each detector returns the
numbers it found together with the source that gave each of them, so that `perseus doctor` can say
where every number came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence


class LaunchEnvironmentError(RuntimeError):
    """The launch environment is contradictory or malformed (names the variables involved)."""


@dataclass(frozen=True)
class LaunchEnv:
    launcher: str  # "torchrun", "openmpi", ..., or "single" when no launcher was detected
    rank: int
    size: int
    local_rank: int
    local_size: int
    node_rank: int
    master_addr: Optional[str]
    master_port: Optional[int]
    sources: Dict[str, str] = field(default_factory=dict)  # field -> "VARIABLE=value" that gave it

    @property
    def num_nodes(self) -> int:
        return max(1, self.size // max(1, self.local_size))


def _int(environ: Mapping[str, str], name: str) -> int:
    raw = environ[name]
    try:
        return int(raw)
    except ValueError:
        raise LaunchEnvironmentError(f"{name}={raw!r} is not an integer") from None


def _detect_torchrun(environ: Mapping[str, str], argv: Sequence[str]) -> Optional[LaunchEnv]:
    if not all(k in environ for k in ("RANK", "WORLD_SIZE")):
        return None
    sources: Dict[str, str] = {}
    rank, size = _int(environ, "RANK"), _int(environ, "WORLD_SIZE")
    sources["rank"], sources["size"] = f"RANK={rank}", f"WORLD_SIZE={size}"
    local_rank = _int(environ, "LOCAL_RANK") if "LOCAL_RANK" in environ else rank
    local_size = _int(environ, "LOCAL_WORLD_SIZE") if "LOCAL_WORLD_SIZE" in environ else size
    sources["local_rank"] = f"LOCAL_RANK={local_rank}" if "LOCAL_RANK" in environ else "RANK (no LOCAL_RANK)"
    sources["local_size"] = (
        f"LOCAL_WORLD_SIZE={local_size}" if "LOCAL_WORLD_SIZE" in environ else "WORLD_SIZE (no LOCAL_WORLD_SIZE)"
    )
    if "GROUP_RANK" in environ:
        node_rank = _int(environ, "GROUP_RANK")
        sources["node_rank"] = f"GROUP_RANK={node_rank}"
    else:
        node_rank = rank // max(1, local_size)
        sources["node_rank"] = "rank // local_size"
    port = _int(environ, "MASTER_PORT") if "MASTER_PORT" in environ else None
    return LaunchEnv(
        launcher="torchrun",
        rank=rank,
        size=size,
        local_rank=local_rank,
        local_size=local_size,
        node_rank=node_rank,
        master_addr=environ.get("MASTER_ADDR"),
        master_port=port,
        sources=sources,
    )


# Precedence: the first detector that recognises its launcher wins.
DETECTORS = [_detect_torchrun]


def _validate(env: LaunchEnv) -> LaunchEnv:
    s = env.sources
    if env.size < 1:
        raise LaunchEnvironmentError(f"world size must be >= 1 (from {s.get('size')})")
    if not 0 <= env.rank < env.size:
        raise LaunchEnvironmentError(f"rank {env.rank} (from {s.get('rank')}) is not below size {env.size} (from {s.get('size')})")
    if not 0 <= env.local_rank < env.local_size:
        raise LaunchEnvironmentError(
            f"local rank {env.local_rank} (from {s.get('local_rank')}) is not below local size "
            f"{env.local_size} (from {s.get('local_size')})"
        )
    if env.local_size > env.size:
        raise LaunchEnvironmentError(
            f"local size {env.local_size} (from {s.get('local_size')}) exceeds size {env.size} (from {s.get('size')})"
        )
    return env


def detect(environ: Optional[Mapping[str, str]] = None, argv: Optional[Sequence[str]] = None) -> LaunchEnv:
    """The launch environment of this process; a single process (rank 0 of 1) when none is found."""
    environ = os.environ if environ is None else environ
    argv = list(argv) if argv is not None else []
    for detector in DETECTORS:
        found = detector(environ, argv)
        if found is not None:
            return _validate(found)
    return LaunchEnv("single", 0, 1, 0, 1, 0, None, None, {"rank": "no launcher detected"})


__all__: List[str] = ["LaunchEnv", "LaunchEnvironmentError", "detect", "DETECTORS"]
