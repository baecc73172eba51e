"""The parsed command line of perseusrun."""

from dataclasses import dataclass, field
from typing import List, Optional, Tuple


@dataclass
class Options:
    np: int
    command: List[str]
    hosts: Optional[str] = None  # -H value
    hostfile: Optional[str] = None
    mode: str = "gloo"  # "gloo": perseusrun starts the ranks; "mpi": Open MPI's mpirun does
    log_dir: Optional[str] = None
    ssh_port: Optional[int] = None
    ssh_identity_file: Optional[str] = None
    ssh_config: Optional[str] = None
    exports: List[Tuple[str, Optional[str]]] = field(default_factory=list)  # -x NAME[=VALUE]
    mpi_args: List[str] = field(default_factory=list)
    dry_run: bool = False
    json: bool = False
    notes: List[str] = field(default_factory=list)  # e.g. "read '–np' as '-np'"
    verbose: bool = False  # horovodrun's --verbose: the plan is printed on stderr before the ranks start
