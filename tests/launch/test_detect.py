"""detect() in a fresh process per case, with the variables (and appended argv) each launcher really sets."""

import json

import pytest

from launch_helpers import run_detect

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

TWO_NODE_RANK_TABLE = {  # Ascend rank table, version 1.0: 2 servers x 2 devices
    "version": "1.0",
    "server_count": "2",
    "server_list": [
        {"server_id": "10.1.0.1", "device": [{"device_id": "0", "device_ip": "192.98.0.1", "rank_id": "0"},
                                             {"device_id": "1", "device_ip": "192.98.0.2", "rank_id": "1"}]},
        {"server_id": "10.1.0.2", "device": [{"device_id": "0", "device_ip": "192.98.1.1", "rank_id": "2"},
                                             {"device_id": "1", "device_ip": "192.98.1.2", "rank_id": "3"}]},
    ],
    "status": "completed",
}
OLD_RANK_TABLE = {  # the older hccl.json layout (group_list / instance_list)
    "status": "completed", "group_count": "1",
    "group_list": [{"group_name": "hccl_world_group", "device_num": "4", "server_num": "2", "instance_count": "4",
                    "instance_list": [
                        {"devices": [{"device_id": "0", "device_ip": "192.98.0.1"}], "rank_id": "0", "server_id": "10.1.0.1"},
                        {"devices": [{"device_id": "1", "device_ip": "192.98.0.2"}], "rank_id": "1", "server_id": "10.1.0.1"},
                        {"devices": [{"device_id": "0", "device_ip": "192.98.1.1"}], "rank_id": "2", "server_id": "10.1.0.2"},
                        {"devices": [{"device_id": "1", "device_ip": "192.98.1.2"}], "rank_id": "3", "server_id": "10.1.0.2"}]}],
}

# (id, environment, appended argv, expected numbers, expected source fragments)
CASES = [
    ("nothing", {}, [], dict(launcher="single", rank=0, size=1, local_rank=0, local_size=1, node_rank=0), {}),
    ("torchrun-2x4-rank5",
     {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2",
      "ROLE_RANK": "5", "ROLE_NAME": "default", "ROLE_WORLD_SIZE": "8", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500",
      "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RUN_ID": "none", "OMP_NUM_THREADS": "1"}, [],
     dict(launcher="torchrun", rank=5, size=8, local_rank=1, local_size=4, node_rank=1, master_addr="10.0.0.1", master_port=29500),
     dict(rank="RANK=5", local_size="LOCAL_WORLD_SIZE=4", node_rank="GROUP_RANK=1")),
    ("torch-distributed-launch-legacy-argv",  # torch<1.9 launch without --use_env: --local_rank in argv
     {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "6007", "OMP_NUM_THREADS": "1"}, ["--local_rank=1"],
     dict(launcher="torchrun", rank=1, size=2, local_rank=1, local_size=2, node_rank=0),
     dict(local_rank="argv --local_rank=1")),
    ("perseusrun-marker",
     {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0", "MASTER_ADDR": "127.0.0.1",
      "MASTER_PORT": "40000", "PERSEUS_MASTER_PORT": "6666", "PERSEUS_LAUNCHER": "perseusrun"}, [],
     dict(launcher="perseusrun", rank=0, size=2, master_port=40000), {}),
    ("horovodrun-gloo",
     {"HOROVOD_HOSTNAME": "10.0.0.2", "HOROVOD_RANK": "6", "HOROVOD_SIZE": "8", "HOROVOD_LOCAL_RANK": "2", "HOROVOD_LOCAL_SIZE": "4",
      "HOROVOD_CROSS_RANK": "1", "HOROVOD_CROSS_SIZE": "2", "HOROVOD_GLOO_RENDEZVOUS_ADDR": "10.0.0.9", "HOROVOD_GLOO_RENDEZVOUS_PORT": "4000",
      "HOROVOD_CONTROLLER": "gloo", "HOROVOD_CPU_OPERATIONS": "gloo", "HOROVOD_GLOO_IFACE": "eth0", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29400"}, [],
     dict(launcher="horovod", rank=6, size=8, local_rank=2, local_size=4, node_rank=1, master_addr="10.0.0.1", master_port=29400),
     dict(node_rank="HOROVOD_CROSS_RANK=1", master_addr="MASTER_ADDR=10.0.0.1")),
    ("openmpi-recorded",  # as Open MPI 4.1 mpirun -np 4 -H a:2,b:2 sets it for rank 3
     {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
      "OMPI_COMM_WORLD_NODE_RANK": "1", "OMPI_UNIVERSE_SIZE": "4", "OMPI_MCA_orte_num_nodes": "2", "PMIX_RANK": "3"}, [],
     dict(launcher="openmpi", rank=3, size=4, local_rank=1, local_size=2, node_rank=1, master_addr=None),
     dict(node_rank="rank // local size", master_addr="set MASTER_ADDR")),
    ("mvapich-mpirun_rsh",
     {"MV2_COMM_WORLD_RANK": "5", "MV2_COMM_WORLD_SIZE": "8", "MV2_COMM_WORLD_LOCAL_RANK": "1", "MV2_COMM_WORLD_LOCAL_SIZE": "4",
      "MPIRUN_RANK": "5", "MPIRUN_NPROCS": "8", "MASTER_ADDR": "node1", "MASTER_PORT": "23456"}, [],
     dict(launcher="mvapich", rank=5, size=8, local_rank=1, local_size=4, node_rank=1, master_addr="node1"),
     dict(rank="MV2_COMM_WORLD_RANK=5")),
    ("mpich-hydra",
     {"PMI_RANK": "2", "PMI_SIZE": "4", "PMI_FD": "7", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2", "HYDRA_CONTROL_FD": "9"}, [],
     dict(launcher="mpich", rank=2, size=4, local_rank=0, local_size=2, node_rank=1), dict(local_size="MPI_LOCALNRANKS=2")),
    ("intel-mpi-hydra",
     {"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2", "I_MPI_HYDRA_TOPOLIB": "hwloc", "I_MPI_ROOT": "/opt/intel/mpi"}, [],
     dict(launcher="mpich", rank=1, size=2, local_rank=1, local_size=2, node_rank=0), {}),
    ("slurm-srun-2x2-task3",
     {"SLURM_JOB_ID": "1234", "SLURM_STEP_ID": "0", "SLURM_STEPID": "0", "SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_NODEID": "1",
      "SLURM_NTASKS": "4", "SLURM_NPROCS": "4", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NUM_NODES": "2", "SLURM_NNODES": "2",
      "SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_NTASKS_PER_NODE": "2",
      "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_STEP_NODELIST": "gpu[07-08]", "SLURMD_NODENAME": "gpu08", "SLURM_GTIDS": "2,3",
      "MASTER_PORT": "29500"}, [],
     dict(launcher="slurm", rank=3, size=4, local_rank=1, local_size=2, node_rank=1, master_addr="gpu07", master_port=29500),
     dict(master_addr="first host of SLURM_STEP_NODELIST=gpu[07-08]", local_size="SLURM_STEP_TASKS_PER_NODE=2(x2) (node 1)")),
    ("slurm-uneven-tasks-per-node",
     {"SLURM_STEP_ID": "3", "SLURM_PROCID": "3", "SLURM_LOCALID": "0", "SLURM_NODEID": "1", "SLURM_NTASKS": "4",
      "SLURM_STEP_TASKS_PER_NODE": "3,1", "SLURM_STEP_NODELIST": "cn1,cn2"}, [],
     dict(launcher="slurm", rank=3, size=4, local_rank=0, local_size=1, node_rank=1, master_addr="cn1"), {}),
    ("slurm-batch-script-is-one-process",  # sbatch's own shell: no SLURM_STEP_ID, only one process runs
     {"SLURM_JOB_ID": "1234", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NODEID": "0", "SLURM_NTASKS": "8",
      "SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_JOB_NODELIST": "gpu[07-08]"}, [],
     dict(launcher="single", rank=0, size=1), {}),
    ("srun-pmi2-fills-local-numbers-from-slurm",  # srun --mpi=pmi2 sets PMI_RANK/PMI_SIZE only
     {"PMI_RANK": "3", "PMI_SIZE": "4", "PMI_FD": "5", "PMI_JOBID": "1234.0", "SLURM_STEP_ID": "0", "SLURM_PROCID": "3",
      "SLURM_LOCALID": "1", "SLURM_NODEID": "1", "SLURM_NTASKS": "4", "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_STEP_NODELIST": "n[1-2]"}, [],
     dict(launcher="mpich", rank=3, size=4, local_rank=1, local_size=2, node_rank=1, master_addr="n1"),
     dict(local_rank="SLURM_LOCALID=1 (from slurm)", master_addr="(from slurm)")),
    ("torchrun-inside-srun",  # srun -N2 --ntasks-per-node=1 torchrun --nproc_per_node=4 ...
     {"SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_LOCALID": "0", "SLURM_NODEID": "1", "SLURM_NTASKS": "2", "SLURM_STEP_NODELIST": "n[1-2]",
      "RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1", "MASTER_ADDR": "n1", "MASTER_PORT": "29500"}, [],
     dict(launcher="torchrun", rank=5, size=8, local_rank=1, local_size=4, node_rank=1), dict(outer_launchers="slurm (SLURM_PROCID=1, SLURM_NTASKS=2)")),
    ("paddle-launch",  # paddle.distributed.launch --ips 10.0.0.1,10.0.0.2 --gpus 0,1: process 2
     {"FLAGS_selected_gpus": "0", "PADDLE_TRAINER_ID": "2", "PADDLE_CURRENT_ENDPOINT": "10.0.0.2:6170", "PADDLE_TRAINERS_NUM": "4",
      "PADDLE_TRAINER_ENDPOINTS": "10.0.0.1:6170,10.0.0.1:6171,10.0.0.2:6170,10.0.0.2:6171", "PADDLE_RANK_IN_NODE": "0"}, [],
     dict(launcher="paddle", rank=2, size=4, local_rank=0, local_size=2, node_rank=1, master_addr="10.0.0.1"),
     dict(size="PADDLE_TRAINERS_NUM=4", local_size="PADDLE_TRAINER_ENDPOINTS (2 endpoint(s) on 10.0.0.2)")),
    ("paddle-seed-PADDLE_NUM_TRAINERS-counts-nodes",  # the seed manual: PADDLE_NUM_TRAINERS=<nodes>, --gpus 2
     {"PADDLE_NUM_TRAINERS": "2", "PADDLE_TRAINER_ID": "3", "CUDA_VISIBLE_DEVICES": "0,1"}, [],
     dict(launcher="paddle", rank=3, size=4, local_rank=1, local_size=2, node_rank=1),
     dict(size="PADDLE_NUM_TRAINERS=2 nodes x 2 per node", local_size="CUDA_VISIBLE_DEVICES=0,1 (2 devices)")),
    ("paddle-both-counts-agree",
     {"PADDLE_NUM_TRAINERS": "2", "PADDLE_TRAINERS_NUM": "8", "PADDLE_TRAINER_ID": "5"}, [],
     dict(launcher="paddle", rank=5, size=8, local_rank=1, local_size=4, node_rank=1), dict(local_size="PADDLE_TRAINERS_NUM=8 / PADDLE_NUM_TRAINERS=2")),
    ("ascend-no-table",  # MindSpore scripts: RANK_ID / RANK_SIZE / ASCEND_DEVICE_ID, 4 visible devices per server
     {"RANK_ID": "5", "RANK_SIZE": "8", "ASCEND_DEVICE_ID": "1", "ASCEND_VISIBLE_DEVICES": "0-3"}, [],
     dict(launcher="ascend", rank=5, size=8, local_rank=1, local_size=4, node_rank=1), dict(local_size="ASCEND_VISIBLE_DEVICES=0-3 (4 devices)")),
    ("modelarts-pytorch-multi-node",  # boot command + the appended --init_method/--rank/--world_size (NODES)
     {"MA_NUM_GPUS": "8", "MA_NUM_HOSTS": "2", "VC_TASK_INDEX": "1", "VC_WORKER_NUM": "2", "VC_WORKER_HOSTS": "job-worker-0.job,job-worker-1.job",
      "MA_VJ_NAME": "job", "MA_TASK_NAME": "worker", "MA_CURRENT_IP": "192.168.0.11"},
     ["--epochs", "1", "--init_method", "tcp://192.168.0.10:6666", "--rank", "1", "--world_size", "2"],
     dict(launcher="modelarts", rank=8, size=16, local_rank=0, local_size=8, node_rank=1, master_addr="192.168.0.10", master_port=6666),
     dict(node_rank="argv --rank 1", size="2 nodes (argv --world_size 2) x 8 per node (MA_NUM_GPUS=8)")),
    ("modelarts-pytorch-spawned-worker",  # the per-GPU worker the boot script spawned (mp.spawn keeps argv)
     {"MA_NUM_GPUS": "8", "MA_NUM_HOSTS": "2", "VC_TASK_INDEX": "1", "LOCAL_RANK": "3"},
     ["--init_method", "tcp://192.168.0.10:6666", "--rank", "1", "--world_size", "2"],
     dict(launcher="modelarts", rank=11, size=16, local_rank=3, local_size=8, node_rank=1), dict(local_rank="LOCAL_RANK=3")),
    ("modelarts-pytorch-single-node",
     {"MA_NUM_GPUS": "2"}, ["--init_method=tcp://127.0.0.1:29501"],
     dict(launcher="modelarts", rank=0, size=2, local_rank=0, local_size=2, node_rank=0, master_addr="127.0.0.1", master_port=29501), {}),
    ("modelarts-env-only",  # no appended argv: VC_/MA_ variables only; master = first worker host
     {"MA_NUM_HOSTS": "4", "VC_TASK_INDEX": "2", "VC_WORKER_HOSTS": "w-0.job,w-1.job,w-2.job,w-3.job", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}, [],
     dict(launcher="modelarts", rank=8, size=16, local_size=4, node_rank=2, master_addr="w-0.job"), dict(master_addr="first host of VC_WORKER_HOSTS")),
    ("modelarts-run_mpi-openmpi-ranks",  # the seed's run_mpi.sh: mpirun + the MA_/VC_WORKER_ variables it forwards
     {"OMPI_COMM_WORLD_RANK": "9", "OMPI_COMM_WORLD_SIZE": "16", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "8",
      "MA_NUM_HOSTS": "2", "MA_NUM_GPUS": "8", "MA_TASK_INDEX": "0", "VC_WORKER_HOSTS": "job-worker-0.job,job-worker-1.job"}, [],
     dict(launcher="openmpi", rank=9, size=16, local_rank=1, local_size=8, node_rank=1, master_addr="job-worker-0.job"),
     dict(master_addr="first host of VC_WORKER_HOSTS (from modelarts)")),
    ("byteps-launcher-gpu-process",
     {"DMLC_ROLE": "worker", "DMLC_WORKER_ID": "1", "DMLC_NUM_WORKER": "2", "DMLC_NUM_SERVER": "1", "DMLC_PS_ROOT_URI": "10.0.0.1",
      "DMLC_PS_ROOT_PORT": "1234", "BYTEPS_LOCAL_RANK": "3", "BYTEPS_LOCAL_SIZE": "8", "NVIDIA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}, [],
     dict(launcher="byteps", rank=11, size=16, local_rank=3, local_size=8, node_rank=1, master_addr="10.0.0.1", master_port=1234),
     dict(size="DMLC_NUM_WORKER=2 x 8 per machine")),
    ("byteps-machine-level",  # one process per machine; NVIDIA_VISIBLE_DEVICES counts the GPUs (seed)
     {"DMLC_ROLE": "worker", "DMLC_WORKER_ID": "1", "DMLC_NUM_WORKER": "2", "DMLC_PS_ROOT_URI": "10.0.0.1", "DMLC_PS_ROOT_PORT": "1234",
      "NVIDIA_VISIBLE_DEVICES": "0,1,2,3"}, [],
     dict(launcher="byteps", rank=4, size=8, local_rank=0, local_size=4, node_rank=1), dict(local_size="NVIDIA_VISIBLE_DEVICES=0,1,2,3 (4 devices)")),
    ("agreeing-launchers-fill",  # horovodrun under mpirun: both agree, Open MPI confirms
     {"HOROVOD_RANK": "1", "HOROVOD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
      "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, [],
     dict(launcher="horovod", rank=1, size=2, local_rank=1, local_size=2, node_rank=0), dict(local_size="(from openmpi)")),
]


@pytest.mark.parametrize("name,env,argv,expected,sources", CASES, ids=[c[0] for c in CASES])
def test_detect(name, env, argv, expected, sources):
    got = run_detect(env, argv)
    assert got.returncode == 0, got
    for key, value in expected.items():
        assert got.env[key] == value, (key, got)
    for key, fragment in sources.items():
        assert fragment in got.env["sources"][key], (key, got.env["sources"])
    for key in ("rank", "size", "local_rank", "local_size", "node_rank", "master_addr", "master_port"):
        assert got.env["sources"].get(key), ("every number names its source", key, got.env["sources"])


def _table(tmp_path, table):
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(table))
    return str(path)


@pytest.mark.parametrize("table", [TWO_NODE_RANK_TABLE, OLD_RANK_TABLE], ids=["v1.0-server_list", "group_list"])
def test_ascend_rank_table(tmp_path, table):
    env = {"RANK_TABLE_FILE": _table(tmp_path, table), "RANK_ID": "3", "RANK_SIZE": "4", "ASCEND_DEVICE_ID": "1",
           "JOB_ID": "10385"}
    got = run_detect(env)
    assert got.returncode == 0, got
    e = got.env
    assert (e["launcher"], e["rank"], e["size"], e["local_rank"], e["local_size"], e["node_rank"], e["master_addr"]) == \
        ("ascend", 3, 4, 1, 2, 1, "10.1.0.1")
    assert "server 1 of 2: 10.1.0.2" in e["sources"]["node_rank"]
    assert "server_id of rank 0" in e["sources"]["master_addr"]


# (id, environment, appended argv, fragments the error must contain)
ERRORS = [
    ("torchrun-vs-openmpi-rank",
     {"RANK": "1", "WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4"}, [],
     ["RANK=1", "OMPI_COMM_WORLD_RANK=2", "disagree"]),
    ("stale-world-size-under-mpirun",
     {"RANK": "0", "WORLD_SIZE": "1", "OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"}, [],
     ["WORLD_SIZE=1", "OMPI_COMM_WORLD_SIZE=4", "unset the variables"]),
    ("local-numbers-disagree",
     {"HOROVOD_RANK": "1", "HOROVOD_SIZE": "2", "HOROVOD_LOCAL_SIZE": "1", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, [], ["HOROVOD_LOCAL_SIZE=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2"]),
    ("rank-not-below-size", {"RANK": "4", "WORLD_SIZE": "4"}, [], ["rank 4", "RANK=4", "WORLD_SIZE=4"]),
    ("local-rank-not-below-local-size", {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}, [],
     ["local rank 2", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"]),
    ("not-an-integer", {"RANK": "abc", "WORLD_SIZE": "4"}, [], ["RANK='abc' is not an integer"]),
    ("bad-master-port", {"RANK": "0", "WORLD_SIZE": "1", "MASTER_PORT": "70000"}, [], ["MASTER_PORT='70000'", "1-65535"]),
    ("modelarts-world-size-vs-MA_NUM_HOSTS", {"MA_NUM_HOSTS": "3"},
     ["--init_method", "tcp://10.0.0.1:6666", "--rank", "0", "--world_size", "2"], ["argv --world_size 2", "MA_NUM_HOSTS=3"]),
    ("modelarts-rank-vs-VC_TASK_INDEX", {"VC_TASK_INDEX": "0"},
     ["--init_method", "tcp://10.0.0.1:6666", "--rank", "1", "--world_size", "2"], ["argv --rank 1", "VC_TASK_INDEX=0"]),
    ("modelarts-bad-init-method", {}, ["--init_method", "10.0.0.1:6666"], ["--init_method 10.0.0.1:6666", "tcp://"]),
    ("paddle-counts-disagree",
     {"PADDLE_TRAINER_ID": "0", "PADDLE_TRAINERS_NUM": "4", "PADDLE_NUM_TRAINERS": "2", "PADDLE_CURRENT_ENDPOINT": "10.0.0.1:6170",
      "PADDLE_TRAINER_ENDPOINTS": "10.0.0.1:6170,10.0.0.1:6171,10.0.0.1:6172,10.0.0.1:6173"}, [],
     ["PADDLE_TRAINERS_NUM=4", "PADDLE_NUM_TRAINERS=2", "counts nodes"]),
    ("paddle-endpoint-not-listed",
     {"PADDLE_TRAINER_ID": "0", "PADDLE_TRAINERS_NUM": "2", "PADDLE_CURRENT_ENDPOINT": "10.0.0.9:6170",
      "PADDLE_TRAINER_ENDPOINTS": "10.0.0.1:6170,10.0.0.1:6171"}, [], ["PADDLE_CURRENT_ENDPOINT=10.0.0.9:6170", "PADDLE_TRAINER_ENDPOINTS"]),
    ("byteps-server-role", {"DMLC_ROLE": "server", "DMLC_NUM_WORKER": "2"}, [], ["DMLC_ROLE=server", "not a training worker"]),
    ("byteps-missing-worker-id", {"DMLC_ROLE": "worker", "DMLC_NUM_WORKER": "2"}, [], ["DMLC_WORKER_ID"]),
    ("ascend-missing-table", {"RANK_TABLE_FILE": "/nonexistent/rank_table.json", "RANK_ID": "0"}, [],
     ["RANK_TABLE_FILE=/nonexistent/rank_table.json", "cannot read"]),
]


@pytest.mark.parametrize("name,env,argv,fragments", ERRORS, ids=[c[0] for c in ERRORS])
def test_detect_errors_name_their_sources(name, env, argv, fragments):
    got = run_detect(env, argv)
    assert got.returncode == 1, got
    assert any(line.startswith("perseus.launch: error: ") for line in got.stderr.splitlines()), got
    for fragment in fragments:
        assert fragment in got.stderr, (fragment, got.stderr)


def test_ascend_rank_size_contradicts_table(tmp_path):
    got = run_detect({"RANK_TABLE_FILE": _table(tmp_path, TWO_NODE_RANK_TABLE), "RANK_ID": "1", "RANK_SIZE": "8"})
    assert got.returncode == 1
    assert "RANK_SIZE=8" in got.stderr and "lists 4 devices" in got.stderr, got


def test_ascend_device_id_contradicts_table(tmp_path):
    got = run_detect({"RANK_TABLE_FILE": _table(tmp_path, TWO_NODE_RANK_TABLE), "RANK_ID": "2", "RANK_SIZE": "4", "ASCEND_DEVICE_ID": "1"})
    assert got.returncode == 1
    assert "ASCEND_DEVICE_ID=1" in got.stderr and "device 0 of 10.1.0.2" in got.stderr, got
