"""This process's place in the job: the engine hvd.init() started (basics.py), its numbers and the policy it was
started with; what the collectives and the process sets ask (they never start or stop anything)."""
import threading
from typing import Any, Dict, Optional

from perseus.engine import Engine


class JobState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.engine = None  # type: Optional[Engine]
        self.info = None  # type: Optional[Dict[str, int]]
        self.policy = {}  # type: Dict[str, Any]  # init()'s policy keywords: the process sets' engines get them too


state = JobState()


def require() -> Dict[str, int]:
    info = state.info
    if info is None:
        raise ValueError("perseus.tensorflow.horovod has not been initialised: call hvd.init() first")
    return info


def size() -> int:
    return require()["size"]


def rank() -> int:
    return require()["rank"]


def local_size() -> int:
    return require()["local_size"]


def local_rank() -> int:
    return require()["local_rank"]


def cross_size() -> int:
    """Number of nodes."""
    return require()["num_nodes"]


def cross_rank() -> int:
    """Index of this rank's node."""
    return require()["node"]
