"""Where perseus's engine rendezvous: its own store on a PERSEUS_MASTER_PORT the user set; otherwise (DDP) on a
free port rank 0 picks and publishes through torch's store, so jobs side by side never collide and the seed's
6666 is never opened unless asked for. The native engine has a
store of its own. Ports are free ones (bound to port 0), never fixed."""

import json
import os
import subprocess
import sys
import threading

import pytest

from perseus import config
from perseus_harness import WORKERS, free_port, launch, python_path

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

DEFAULT_PERSEUS_PORT = config.PerseusConfig().master_port  # the seed's 6666, never opened unless asked for


def _outputs(results):
    return [r.output for r in results]


def test_ddp_without_perseus_master_port_picks_a_free_port_never_the_default():
    master = free_port()
    ranks = _outputs(launch("rendezvous_ports.py", 2, ["ddp"],
                            env={"PERSEUS_MASTER_PORT": None, "MASTER_PORT": str(master)}))
    # rank 0 serves torch's store and the engine's; the other listeners are Gloo's pairs on ports the kernel picked
    how, address, port = ranks[0]["store"]
    assert how == "picked" and port not in (master, DEFAULT_PERSEUS_PORT)
    assert {master, port} <= set(ranks[0]["listening"])
    assert all(DEFAULT_PERSEUS_PORT not in rank["listening"] for rank in ranks)
    assert ranks[1]["store"] == ranks[0]["store"]
    assert ranks[0]["weight_sum"] == ranks[1]["weight_sum"]


def test_a_perseus_master_port_the_user_set_keeps_its_own_store():
    master, own = free_port(), free_port()
    while own == master:
        own = free_port()
    ranks = _outputs(launch("rendezvous_ports.py", 2, ["ddp"],
                            env={"PERSEUS_MASTER_PORT": str(own), "MASTER_PORT": str(master)}))
    assert {master, own} <= set(ranks[0]["listening"])
    assert ranks[1]["store"] == ["PERSEUS_MASTER_PORT", "127.0.0.1", own]


def test_hvd_own_rendezvous_without_perseus_master_port_serves_on_master_port():
    # PERSEUS_USE_DDP_LAUNCHER=0 (mpirun style): hvd.init() makes no torch default group (perseus's collectives
    # do not need one), so the engine's store takes MASTER_PORT instead of a second port
    master = free_port()
    ranks = _outputs(launch("rendezvous_ports.py", 2, ["hvd"], env={
        "PERSEUS_MASTER_PORT": None, "MASTER_PORT": str(master), "PERSEUS_USE_DDP_LAUNCHER": "0"}))
    assert master in ranks[0]["listening"] and all(DEFAULT_PERSEUS_PORT not in r["listening"] for r in ranks)
    assert all(rank["store"] == ["MASTER_PORT", "127.0.0.1", master] and not rank["torch_initialised"]
               for rank in ranks)
    assert all(rank["sum"] == 3.0 for rank in ranks)


@pytest.mark.parametrize("mode", ["ddp", "hvd"])
def test_under_perseusrun_the_engine_joins_the_store_perseusrun_serves(mode, tmp_path):
    env = dict(os.environ, PYTHONPATH=python_path(), OMP_NUM_THREADS="1",
               PERSEUS_TEST_OUT=str(tmp_path / "rank{rank}.json"))
    for name in ("MASTER_ADDR", "MASTER_PORT", "PERSEUS_MASTER_PORT", "PERSEUS_STORE_ADDR"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "perseus.run", "-np", "2", sys.executable,
                           str(WORKERS / "rendezvous_ports.py"), mode], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=180)
    assert done.returncode == 0, done.stdout[-4000:]
    ranks = [json.loads((tmp_path / "rank{}.json".format(r)).read_text()) for r in range(2)]
    how, address, port = ranks[0]["store"]
    assert how == "perseusrun" and ranks[1]["store"] == ranks[0]["store"]
    assert all(port not in rank["listening"] for rank in ranks)  # perseusrun's child serves it, no rank does
    if mode == "hvd":
        assert [rank["sum"] for rank in ranks] == [3.0, 3.0]
    else:
        assert ranks[0]["weight_sum"] == ranks[1]["weight_sum"]


def test_two_ddp_jobs_side_by_side_both_succeed():
    outcomes = {}

    def job(name):
        try:
            outcomes[name] = _outputs(launch("rendezvous_ports.py", 2, ["ddp"], env={"PERSEUS_MASTER_PORT": None}))
        except AssertionError as error:
            outcomes[name] = error

    threads = [threading.Thread(target=job, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name, outcome in outcomes.items():
        assert isinstance(outcome, list), "job {} failed: {}".format(name, outcome)
    assert len(outcomes) == 2
