"""horovodrun (Gloo mode and its elastic driver): HOROVOD_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_*, HOROVOD_CROSS_RANK."""

from typing import Optional, Sequence

from .model import Reading
from .values import Vars


def read_horovod(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    if not v.has("HOROVOD_RANK", "HOROVOD_SIZE"):
        return None
    r = Reading("horovod")
    r.put("rank", v.int("HOROVOD_RANK"), v.src("HOROVOD_RANK"))
    r.put("size", v.int("HOROVOD_SIZE", minimum=1), v.src("HOROVOD_SIZE"))
    if v.has("HOROVOD_LOCAL_RANK"):
        r.put("local_rank", v.int("HOROVOD_LOCAL_RANK"), v.src("HOROVOD_LOCAL_RANK"))
    if v.has("HOROVOD_LOCAL_SIZE"):
        r.put("local_size", v.int("HOROVOD_LOCAL_SIZE", minimum=1), v.src("HOROVOD_LOCAL_SIZE"))
    # Horovod's cross rank is this host's index among the hosts (ranks with the same local rank).
    if v.has("HOROVOD_CROSS_RANK"):
        r.put("node_rank", v.int("HOROVOD_CROSS_RANK"), v.src("HOROVOD_CROSS_RANK"))
    # HOROVOD_GLOO_RENDEZVOUS_ADDR is horovodrun's own HTTP store on the launching host, not rank 0's
    # address, so the master address comes from MASTER_ADDR (completed later) when one is set.
    return r
