"""The parsed command line of perseusrun."""

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from .hosts import HostSlots


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
    # elastic mode (perseus/run/elastic): on when --min-np or --host-discovery-script is given
    min_np: Optional[int] = None
    max_np: Optional[int] = None
    host_discovery_script: Optional[str] = None
    slots_per_host: Optional[int] = None
    elastic_timeout: int = 600
    reset_limit: Optional[int] = None
    cooldown_range: Optional[Tuple[int, int]] = None
    fixed_hosts: Optional[List[HostSlots]] = None  # elastic with -H / --hostfile instead of a discovery script

    @property
    def elastic(self) -> bool:
        return self.min_np is not None or self.host_discovery_script is not None
