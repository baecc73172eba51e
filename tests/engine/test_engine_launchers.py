"""For every launcher perseus.launch knows: 2 processes on 127.0.0.1 with exactly that launcher's variables
(as its tests/launch fixtures spell them) detect their numbers and complete an allreduce through the engine.
Launchers that name no master address get MASTER_ADDR, as perseus.launch documents; the engine's store is
at PERSEUS_MASTER_PORT."""

import json

import pytest

from engine_helpers import bare_with, free_ports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def launcher_envs(name, ports):
    """Per-rank variables of launcher `name` for a 2-rank job on this machine."""
    master = {"MASTER_ADDR": "127.0.0.1"}
    if name == "torchrun":
        return [dict(master, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r), LOCAL_WORLD_SIZE="2", GROUP_RANK="0",
                     MASTER_PORT=str(ports[1])) for r in range(2)], []
    if name == "horovod":
        return [dict(master, HOROVOD_RANK=str(r), HOROVOD_SIZE="2", HOROVOD_LOCAL_RANK=str(r), HOROVOD_LOCAL_SIZE="2",
                     HOROVOD_CROSS_RANK="0", HOROVOD_CROSS_SIZE="1", HOROVOD_HOSTNAME="127.0.0.1")
                for r in range(2)], []
    if name == "openmpi":
        return [dict(master, OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_LOCAL_RANK=str(r),
                     OMPI_COMM_WORLD_LOCAL_SIZE="2") for r in range(2)], []
    if name == "mvapich":
        return [dict(master, MV2_COMM_WORLD_RANK=str(r), MV2_COMM_WORLD_SIZE="2", MV2_COMM_WORLD_LOCAL_RANK=str(r),
                     MV2_COMM_WORLD_LOCAL_SIZE="2") for r in range(2)], []
    if name == "mpich":
        return [dict(master, PMI_RANK=str(r), PMI_SIZE="2", MPI_LOCALRANKID=str(r), MPI_LOCALNRANKS="2")
                for r in range(2)], []
    if name == "slurm":
        return [dict(master, SLURM_JOB_ID="1234", SLURM_STEP_ID="0", SLURM_STEPID="0", SLURM_PROCID=str(r),
                     SLURM_LOCALID=str(r), SLURM_NODEID="0", SLURM_NTASKS="2", SLURM_STEP_NUM_TASKS="2",
                     SLURM_STEP_NUM_NODES="1", SLURM_STEP_TASKS_PER_NODE="2", SLURM_STEP_NODELIST="localhost")
                for r in range(2)], []
    if name == "paddle":
        endpoints = ",".join("127.0.0.1:{}".format(p) for p in ports[1:3])
        return [{"PADDLE_TRAINER_ID": str(r), "PADDLE_TRAINERS_NUM": "2", "PADDLE_TRAINER_ENDPOINTS": endpoints,
                 "PADDLE_CURRENT_ENDPOINT": "127.0.0.1:{}".format(ports[1 + r]), "FLAGS_selected_gpus": str(r)}
                for r in range(2)], []
    if name == "ascend":
        return [dict(master, RANK_ID=str(r), RANK_SIZE="2", ASCEND_DEVICE_ID=str(r)) for r in range(2)], []
    if name == "modelarts":  # node level: one process per "node", numbers from argv and VC_*/MA_*
        argv = [["--init_method", "tcp://127.0.0.1:{}".format(ports[1]), "--rank", str(r), "--world_size", "2"]
                for r in range(2)]
        return [{"MA_NUM_HOSTS": "2", "VC_TASK_INDEX": str(r), "MA_NUM_GPUS": "1"} for r in range(2)], argv
    if name == "byteps":
        return [{"DMLC_ROLE": "worker", "DMLC_WORKER_ID": str(r), "DMLC_NUM_WORKER": "2", "DMLC_NUM_SERVER": "1",
                 "DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": str(ports[1]), "BYTEPS_LOCAL_RANK": "0",
                 "BYTEPS_LOCAL_SIZE": "1"} for r in range(2)], []
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["torchrun", "horovod", "openmpi", "mvapich", "mpich", "slurm", "paddle", "ascend",
                                  "modelarts", "byteps"])
def test_two_ranks_with_the_launchers_variables(engine_library, name):
    ports = free_ports(3)
    envs, argv = launcher_envs(name, ports)
    for env in envs:
        env["PERSEUS_MASTER_PORT"] = str(ports[0])
    done = bare_with(engine_library, "launcher", envs, argv)
    for p in done:
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    found = [json.loads(line[len("REPORT "):]) for p in done for line in p.stdout.splitlines()
             if line.startswith("REPORT ")]
    assert sorted(r["rank"] for r in found) == [0, 1]
    for r in found:
        assert r["size"] == 2
        assert r["master"] in ("127.0.0.1", "localhost")  # Slurm names its first node
        assert r["values"] == [3.0] * 4
    assert {r["launcher"] for r in found} == {name}  # detect() took the numbers from this launcher
