"""Slurm srun steps: SLURM_PROCID, SLURM_STEP_NUM_TASKS / SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, tasks per node."""

from typing import Optional, Sequence

from .model import Reading
from .values import Vars, first_slurm_host, slurm_tasks_on_node

# Step ids Slurm gives to the batch script, the extern step and interactive allocations
# (SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT, SLURM_INTERACTIVE_STEP): none of them is a task srun started.
NOT_SRUN_STEPS = {"4294967294", "4294967295", "4294967293", "4294967292", "batch", "extern", "interactive"}


def read_slurm(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    step = v.first("SLURM_STEP_ID", "SLURM_STEPID")
    size_name = v.first("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS")
    # sbatch sets SLURM_PROCID=0 and SLURM_NTASKS=N in the batch script's own shell, which is ONE
    # process: only srun's tasks (SLURM_STEP_ID set) are launched ranks.
    if not v.has("SLURM_PROCID") or step is None or size_name is None or v.text(step) in NOT_SRUN_STEPS:
        return None
    r = Reading("slurm")
    r.put("rank", v.int("SLURM_PROCID"), v.src("SLURM_PROCID"))
    r.put("size", v.int(size_name, minimum=1), v.src(size_name))
    if v.has("SLURM_LOCALID"):
        r.put("local_rank", v.int("SLURM_LOCALID"), v.src("SLURM_LOCALID"))
    if v.has("SLURM_NODEID"):
        r.put("node_rank", v.int("SLURM_NODEID"), v.src("SLURM_NODEID"))
    per_node = v.first("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
    if per_node is not None and r.node_rank is not None:
        count = slurm_tasks_on_node(v.text(per_node), r.node_rank)
        if count is not None:
            r.put("local_size", count, "{} (node {})".format(v.src(per_node), r.node_rank))
    if r.local_size is None and v.has("SLURM_NTASKS_PER_NODE"):
        r.put("local_size", v.int("SLURM_NTASKS_PER_NODE", minimum=1), v.src("SLURM_NTASKS_PER_NODE"))
    nodelist = v.first("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
    if nodelist is not None:
        r.put("master_addr", first_slurm_host(v.text(nodelist)), "first host of " + v.src(nodelist))
    return r
