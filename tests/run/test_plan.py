"""`perseusrun --dry-run [--json]`: the plan per rank (host, variables, command), and `perseusrun -h`."""

import json
import os
import socket

import pytest

from run_helpers import perseusrun

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def plan(args, env=None):
    proc = perseusrun(["--dry-run", "--json"] + args, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_single_host_defaults():
    p, _ = plan(["-np", "3", "--", "python", "train.py", "--model", "resnet50"])
    assert p["mode"] == "gloo" and p["hosts"] == [{"host": "localhost", "slots": 3}]
    assert p["master_addr"] == "127.0.0.1" and p["perseus_master_port"] is None  # perseus joins torch's store
    for rank, r in enumerate(p["ranks"]):
        assert (r["rank"], r["host"], r["local_rank"], r["local_size"], r["node_rank"], r["launch"]) == \
            (rank, "localhost", rank, 3, 0, "local")
        assert r["command"] == ["python", "train.py", "--model", "resnet50"]
        e = r["env"]
        assert (e["RANK"], e["WORLD_SIZE"], e["LOCAL_RANK"], e["LOCAL_WORLD_SIZE"], e["GROUP_RANK"], e["NODE_RANK"]) == \
            (str(rank), "3", str(rank), "3", "0", "0")
        assert e["MASTER_PORT"] == str(p["master_port"]) and "PERSEUS_MASTER_PORT" not in e
        assert e["OMP_NUM_THREADS"] == "1"
        assert (e["HOROVOD_RANK"], e["HOROVOD_SIZE"], e["HOROVOD_LOCAL_RANK"], e["HOROVOD_LOCAL_SIZE"],
                e["HOROVOD_CROSS_RANK"], e["HOROVOD_CROSS_SIZE"], e["HOROVOD_HOSTNAME"]) == \
            (str(rank), "3", str(rank), "3", "0", "1", "localhost")


def test_command_without_double_dash_and_text_plan():
    proc = perseusrun(["-np", "2", "-H", "localhost:2", "--dry-run", "python", "train.py", "--dry-run"])
    assert proc.returncode == 0, proc.stderr
    assert "rank 1 on localhost (local rank 1 of 2, node 0), started by perseusrun" in proc.stdout
    assert "command: python train.py --dry-run" in proc.stdout  # the command's own options stay the command's


def test_multi_host_gloo_over_ssh_with_port(tmp_path):
    env = {"PERSEUS_ALLREDUCE_DTYPE": "2", "NCCL_DEBUG": "INFO", "MASTER_PORT": "23456"}
    p, _ = plan(["-np", "4", "-H", "10.255.0.1:2,10.255.0.2:2", "-p", "36666", "-x", "FOO=bar baz", "--", "python", "t.py"], env)
    assert p["master_addr"] == "10.255.0.1" and p["master_port"] == 23456 and p["perseus_master_port"] is None
    assert [(r["host"], r["node_rank"], r["local_rank"], r["launch"]) for r in p["ranks"]] == \
        [("10.255.0.1", 0, 0, "ssh"), ("10.255.0.1", 0, 1, "ssh"), ("10.255.0.2", 1, 0, "ssh"), ("10.255.0.2", 1, 1, "ssh")]
    # what horovodrun --gloo sets, for Horovod scripts and Horovod's own tests (tearDown re-initialises on them)
    assert [{k[len("HOROVOD_"):]: v for k, v in r["env"].items() if k.startswith("HOROVOD_")} for r in p["ranks"]] == [
        {"RANK": str(i), "SIZE": "4", "LOCAL_RANK": str(i % 2), "LOCAL_SIZE": "2", "CROSS_RANK": str(i // 2),
         "CROSS_SIZE": "2", "HOSTNAME": "10.255.0.{}".format(1 + i // 2)} for i in range(4)]
    r3 = p["ranks"][3]
    assert "HOROVOD_RANK=3" in r3["command"][-1]
    assert r3["env"]["PERSEUS_ALLREDUCE_DTYPE"] == "2" and r3["env"]["NCCL_DEBUG"] == "INFO" and "PATH" in r3["env"]
    assert r3["env"]["FOO"] == "bar baz" and r3["env"]["GROUP_WORLD_SIZE"] == "2"
    ssh = r3["command"]
    assert ssh[:3] == ["ssh", "-o", "BatchMode=yes"] and ssh[-2] == "10.255.0.2"
    assert ssh[ssh.index("-p") + 1] == "36666" and "StrictHostKeyChecking=no" in ssh
    remote = ssh[-1]
    assert remote.startswith("cd {} ".format(os.getcwd()))
    assert "RANK=3" in remote and "'FOO=bar baz'" not in remote and "FOO='bar baz'" in remote
    assert remote.endswith(" python t.py")


def test_hostfile_and_fewer_ranks_than_slots(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# cluster\n10.255.0.1 slots=2\n\n10.255.0.2:2  # second\n10.255.0.3\n")
    p, _ = plan(["-np", "3", "--hostfile", str(hostfile), "--", "true"])
    assert [h["slots"] for h in p["hosts"]] == [2, 2, 1]
    assert [(r["host"], r["local_size"]) for r in p["ranks"]] == [("10.255.0.1", 2), ("10.255.0.1", 2), ("10.255.0.2", 1)]
    assert p["ranks"][2]["env"]["GROUP_WORLD_SIZE"] == "2"


def test_mpi_command():
    env = {"PERSEUS_GLOO_NETWORK_INTERFACE": "lo", "PERSEUS_NCCL_NETWORK_INTERFACE": "lo", "PERSEUS_ALLREDUCE_STREAMS": "8"}
    env["PERSEUS_MASTER_PORT"] = "6666"
    p, _ = plan(["--mpi", "-np", "4", "-H", "10.255.0.1:3,10.255.0.2:1", "--ssh-port", "36666", "--log-dir", "/tmp/l",
                 "--mpi-args", "--mca pml ob1", "--", "python", "train.py"], env)
    argv = p["mpirun"]
    assert argv[0] == "mpirun"
    assert ("--allow-run-as-root" in argv) == (os.geteuid() == 0)
    joined = " ".join(argv)
    for part in ("-np 4", "-H 10.255.0.1:3,10.255.0.2:1", "--bind-to none", "--map-by slot", "--tag-output",
                 "-x MASTER_ADDR=10.255.0.1", "-x PERSEUS_MASTER_PORT=6666", "-x NCCL_SOCKET_IFNAME=lo",
                 "-x GLOO_SOCKET_IFNAME=lo", "-x PERSEUS_ALLREDUCE_STREAMS", "--mca btl_tcp_if_include lo",
                 "--mca plm_rsh_args -p 36666", "--output-filename /tmp/l", "--mca pml ob1"):
        assert part in joined, part
    assert argv[-6:-4] == ["sh", "-c"] and argv[-3:] == ["perseus-rank", "python", "train.py"]
    assert "for f in 0 3;" in argv[-4]  # node index from the by-slot placement: host 2 starts at rank 3
    assert [(r["rank"], r["node_rank"], r["env"]["OMPI_COMM_WORLD_LOCAL_SIZE"]) for r in p["ranks"]] == \
        [(0, 0, "3"), (1, 0, "3"), (2, 0, "3"), (3, 1, "1")]


def test_seed_typographic_dashes_are_read_as_hyphens():
    # the seed prints: perseusrun –-mpi –np 16 –H host1:8,host2:8 -- python train.py --model resnet50
    proc = perseusrun(["–-mpi", "–np", "16", "–H", "10.255.0.1:8,10.255.0.2:8", "--dry-run", "--json", "--", "python", "train.py"])
    assert proc.returncode == 0, proc.stderr
    p = json.loads(proc.stdout)
    assert p["mode"] == "mpi" and p["np"] == 16 and len(p["hosts"]) == 2
    for typed, read in (("–-mpi", "--mpi"), ("–np", "-np"), ("–H", "-H")):
        assert "perseusrun: note: read '{}' as '{}'".format(typed, read) in proc.stderr


def test_a_perseus_master_port_the_user_set_is_passed_on():
    p, _ = plan(["-np", "2", "--", "true"], {"PERSEUS_MASTER_PORT": "29631", "MASTER_PORT": "29630"})
    assert (p["master_port"], p["perseus_master_port"]) == (29630, 29631)
    assert all(r["env"]["PERSEUS_MASTER_PORT"] == "29631" for r in p["ranks"])


def test_the_master_port_perseusrun_picks_is_held_until_the_job_serves_it():
    from perseus.run import ports

    first, second = ports.choose({}, master_is_local=True), ports.choose({}, master_is_local=True)
    try:
        assert first.held is not None and first.held.held and first.master_port != second.master_port
        with socket.socket() as other:  # a plain bind of the held port fails: nobody else is handed it
            with pytest.raises(OSError):
                other.bind(("", first.master_port))
        assert not first.held.served()
        with socket.socket() as server:  # the rank that serves it binds as torch's TCPStore does, and listens
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("", first.master_port))
            server.listen(1)
            assert first.held.served()
    finally:
        first.held.release()
        second.held.release()


def test_help_documents_the_launcher():
    proc = perseusrun(["-h"])
    assert proc.returncode == 0
    for part in ("-np NP", "--hostfile", "--gloo", "--mpi", "--log-dir", "--ssh-port", "-x VAR[=VALUE]", "--dry-run",
                 "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK", "PERSEUS_MASTER_PORT",
                 "PERSEUS_NCCL_NETWORK_INTERFACE -> NCCL_SOCKET_IFNAME", "btl_tcp_if_include", "GLOO_TIMEOUT_SECONDS",
                 "[R]<stdout>:", "--allow-run-as-root", "–np"):
        assert part in proc.stdout, part
