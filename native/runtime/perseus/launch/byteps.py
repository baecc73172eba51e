"""BytePS / DMLC (ps-lite) workers: DMLC_ROLE, DMLC_WORKER_ID and DMLC_NUM_WORKER (which count MACHINES),
DMLC_PS_ROOT_URI / DMLC_PS_ROOT_PORT, BYTEPS_LOCAL_RANK / BYTEPS_LOCAL_SIZE (one per GPU process)."""

from typing import Optional, Sequence

from .model import LaunchEnvironmentError, Reading
from .values import Vars, visible_device_count


def read_byteps(v: Vars, argv: Sequence[str]) -> Optional[Reading]:
    if not v.has("DMLC_ROLE"):
        return None
    role = v.text("DMLC_ROLE")
    if role != "worker":
        raise LaunchEnvironmentError(
            "DMLC_ROLE={}: this process is a BytePS {}, not a training worker; "
            "run the training script only where DMLC_ROLE=worker".format(role, role))
    for required in ("DMLC_WORKER_ID", "DMLC_NUM_WORKER"):
        if not v.has(required):
            raise LaunchEnvironmentError("DMLC_ROLE=worker is set but {} is not (BytePS requires it on every worker)".format(required))
    r = Reading("byteps", process_level=v.has("BYTEPS_LOCAL_RANK"))
    machine, machines = v.int("DMLC_WORKER_ID"), v.int("DMLC_NUM_WORKER", minimum=1)
    if machine >= machines:
        raise LaunchEnvironmentError("{} is not below {}".format(v.src("DMLC_WORKER_ID"), v.src("DMLC_NUM_WORKER")))
    r.put("node_rank", machine, v.src("DMLC_WORKER_ID"))
    if v.has("BYTEPS_LOCAL_SIZE"):
        r.put("local_size", v.int("BYTEPS_LOCAL_SIZE", minimum=1), v.src("BYTEPS_LOCAL_SIZE"))
    else:
        # BytePS' launcher.py starts one process per entry of NVIDIA_VISIBLE_DEVICES.
        environ = dict(v.environ)
        devices = visible_device_count({k: environ[k] for k in ("NVIDIA_VISIBLE_DEVICES",) if k in environ}) or visible_device_count(environ)
        r.put("local_size", *(devices if devices else (1, "no BYTEPS_LOCAL_SIZE or device list: one process per machine")))
    if v.has("BYTEPS_LOCAL_RANK"):
        r.put("local_rank", v.int("BYTEPS_LOCAL_RANK"), v.src("BYTEPS_LOCAL_RANK"))
    else:
        r.put("local_rank", 0, "the machine's only process (no BYTEPS_LOCAL_RANK)")
    r.put("rank", machine * r.local_size + r.local_rank, "machine {} x {} + local rank {}".format(machine, r.local_size, r.local_rank))
    r.put("size", machines * r.local_size, "{} x {} per machine ({})".format(v.src("DMLC_NUM_WORKER"), r.local_size, r.sources["local_size"]))
    if v.has("DMLC_PS_ROOT_URI"):
        r.put("master_addr", v.text("DMLC_PS_ROOT_URI"), v.src("DMLC_PS_ROOT_URI"))
    if v.has("DMLC_PS_ROOT_PORT"):
        r.put("master_port", v.port("DMLC_PS_ROOT_PORT"), v.src("DMLC_PS_ROOT_PORT"))
    return r
