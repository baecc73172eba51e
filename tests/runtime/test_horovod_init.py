"""hvd.init(): the torch launcher's rendezvous (PERSEUS_USE_DDP_LAUNCHER=1) or perseus's own on
MASTER_ADDR:PERSEUS_MASTER_PORT (=0, mpirun style); the port rule; GLOO_TIMEOUT_SECONDS."""

import subprocess

import pytest

from perseus import config
from perseus_harness import launch

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_torch_launcher_rendezvous_plus_perseus_rendezvous_on_its_own_port():
    ranks = [r.output for r in launch("hvd_init.py", 2, ["launcher"])]
    for rank in ranks:
        assert rank["size"] == 2 and rank["sum"] == 3.0 and rank["backend"] == "gloo"
        assert rank["perseus_port_open"]  # rank 0 serves the perseus rendezvous on PERSEUS_MASTER_PORT


def test_mpirun_style_without_master_port_uses_the_perseus_rendezvous():
    ranks = [r.output for r in launch("hvd_init.py", 2, ["launcher"],
                                      env={"MASTER_PORT": None, "PERSEUS_USE_DDP_LAUNCHER": "0"})]
    for rank in ranks:
        assert rank["sum"] == 3.0 and rank["default_group_port"] is None and rank["perseus_port_open"]


def test_gloo_timeout_seconds_bounds_a_collective_a_rank_never_joins():
    ranks = [r.output for r in launch("hvd_init.py", 2, ["timeout"],
                                      env={"GLOO_TIMEOUT_SECONDS": "3", "CASE_SLEEP": "8"}, timeout=60)]
    assert ranks[0]["raised"], ranks[0]
    assert 2.5 < ranks[0]["seconds"] < 7.5, ranks[0]  # the timeout, not the other rank leaving at 8 s


@pytest.fixture
def environment(monkeypatch):
    for name in ("PERSEUS_MASTER_PORT", "MASTER_PORT", "PERSEUS_USE_DDP_LAUNCHER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    yield monkeypatch
    monkeypatch.undo()
    config.reload()


def test_torch_launcher_mode_without_master_port_says_what_to_do(environment):
    import perseus.torch.horovod as hvd
    config.reload()
    with pytest.raises(RuntimeError, match="MASTER_ADDR/MASTER_PORT are not set.*PERSEUS_USE_DDP_LAUNCHER=0"):
        hvd.init()
    assert not hvd.is_initialized()


def test_perseus_port_must_differ_from_master_port(environment):
    import perseus.torch.horovod as hvd
    environment.setenv("MASTER_PORT", "29555")
    environment.setenv("PERSEUS_MASTER_PORT", "29555")
    config.reload()
    with pytest.raises(config.ConfigError, match="PERSEUS_MASTER_PORT=29555 is the same port as MASTER_PORT=29555"):
        hvd.init()
    assert not hvd.is_initialized()


def _ipv4(interface):
    done = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", interface], capture_output=True, text=True)
    words = done.stdout.split()
    return words[words.index("inet") + 1].split("/")[0] if "inet" in words else None


@pytest.mark.parametrize("interface", ["lo", "eth0"])
def test_gloo_network_interface_decides_where_perseus_groups_connect(interface):
    eth0 = _ipv4("eth0")
    if eth0 is None:
        pytest.skip("no IPv4 eth0 on this machine to tell the interfaces apart")
    ranks = [r.output for r in launch("hvd_init.py", 2, ["interfaces"],
                                      env={"PERSEUS_GLOO_NETWORK_INTERFACE": interface})]
    for rank in ranks:
        # torch's own default group and the rendezvous stay on MASTER_ADDR=127.0.0.1; perseus's groups follow the variable
        assert (eth0 in rank["local_addresses"]) is (interface == "eth0"), rank
