"""torchrun / torch.distributed.launch / perseusrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK."""

from typing import Optional, Sequence

from .model import Reading
from .values import Vars, argv_option, parse_int

# perseusrun sets the torchrun variables and marks them with PERSEUS_LAUNCHER=perseusrun.
PERSEUSRUN_MARKER = ("PERSEUS_LAUNCHER", "perseusrun")


def read_torchrun(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    if not v.has("RANK", "WORLD_SIZE"):
        return None
    name, value = PERSEUSRUN_MARKER
    r = Reading("perseusrun" if v.environ.get(name) == value else "torchrun")
    r.put("rank", v.int("RANK"), v.src("RANK"))
    r.put("size", v.int("WORLD_SIZE", minimum=1), v.src("WORLD_SIZE"))
    if v.has("LOCAL_RANK"):
        r.put("local_rank", v.int("LOCAL_RANK"), v.src("LOCAL_RANK"))
    else:
        # torch.distributed.launch without --use_env passes --local_rank=N (--local-rank since torch 2.0).
        found = argv_option(argv, "--local_rank", "--local-rank")
        if found is not None:
            r.put("local_rank", parse_int(found[0], found[1]), "argv " + found[1])
    if v.has("LOCAL_WORLD_SIZE"):
        r.put("local_size", v.int("LOCAL_WORLD_SIZE", minimum=1), v.src("LOCAL_WORLD_SIZE"))
    if v.has("GROUP_RANK"):
        r.put("node_rank", v.int("GROUP_RANK"), v.src("GROUP_RANK"))
    if v.has("MASTER_ADDR"):
        r.put("master_addr", v.text("MASTER_ADDR"), v.src("MASTER_ADDR"))
    if v.has("MASTER_PORT"):
        r.put("master_port", v.port("MASTER_PORT"), v.src("MASTER_PORT"))
    return r
