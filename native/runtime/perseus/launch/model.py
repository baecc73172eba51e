"""The data of launch detection: what a job says about this process, and who said it."""

from dataclasses import dataclass, field
from typing import Dict, Optional


class LaunchEnvironmentError(RuntimeError):
    """The launch environment is contradictory or malformed (the message names the variables involved)."""


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

    def to_dict(self) -> Dict[str, object]:
        return {
            "launcher": self.launcher,
            "rank": self.rank,
            "size": self.size,
            "local_rank": self.local_rank,
            "local_size": self.local_size,
            "node_rank": self.node_rank,
            "num_nodes": self.num_nodes,
            "master_addr": self.master_addr,
            "master_port": self.master_port,
            "sources": dict(self.sources),
        }


# The numbers a LaunchEnv carries, in the order reports list them.
FIELDS = ("rank", "size", "local_rank", "local_size", "node_rank", "master_addr", "master_port")


@dataclass
class Reading:
    """What one launcher's variables say; None where that launcher says nothing.

    `process_level` is True when the launcher starts (and numbers) every process itself; False for
    node-level platforms (ModelArts, BytePS without BYTEPS_LOCAL_RANK) that start one command per
    node and leave the per-process numbers to be derived.
    """

    launcher: str
    rank: Optional[int] = None
    size: Optional[int] = None
    local_rank: Optional[int] = None
    local_size: Optional[int] = None
    node_rank: Optional[int] = None
    master_addr: Optional[str] = None
    master_port: Optional[int] = None
    process_level: bool = True
    sources: Dict[str, str] = field(default_factory=dict)

    def put(self, name: str, value: object, source: str) -> None:
        setattr(self, name, value)
        self.sources[name] = source

    def describe(self) -> str:
        """'openmpi (OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=4)': for messages naming both sides."""
        return "{} ({}, {})".format(self.launcher, self.sources.get("rank"), self.sources.get("size"))
