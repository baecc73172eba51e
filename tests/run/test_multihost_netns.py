"""The multi-host Gloo path for real: perseusrun in one network namespace starts a rank in another one over
ssh (a real sshd on port 36666), and the two ranks allreduce across the veth link."""

import time
import uuid

import pytest

from run_helpers import PYTHON, SCRIPTS, perseusrun, processes_with, rank_lines, reports
from support import netns_hosts

reason = netns_hosts.missing_requirements()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(reason), reason=reason or "ok")]


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    hosts = netns_hosts.start(tmp_path_factory.mktemp("netns"))
    yield hosts
    netns_hosts.stop(hosts)
    assert not netns_hosts.left_over(hosts), "namespaces removed"


def _args(hosts, np_, slots, script_args):
    return ["-np", str(np_), "-H", "{}:{},{}:{}".format(hosts.addrs[0], slots, hosts.addrs[1], slots), "-p", str(netns_hosts.SSH_PORT),
            "--ssh-config", hosts.ssh_config, "--"] + [PYTHON] + script_args


def test_allreduce_across_two_namespaces(two_hosts):
    proc = perseusrun(_args(two_hosts, 2, 1, [str(SCRIPTS / "allreduce.py"), "--detect"]),
                      env={"PERSEUS_GLOO_NETWORK_INTERFACE": netns_hosts.IFACE}, prefix=two_hosts.in_ns(0))
    assert proc.returncode == 0, proc.stderr
    got = reports(proc.stdout)
    assert [r["rank"] for r in got] == [0, 1] and {r["sum"] for r in got} == {3.0}
    assert got[0]["netns"] == two_hosts.netns_inode(0)
    assert got[1]["netns"] == two_hosts.netns_inode(1), "rank 1 ran on the second host, started over ssh"
    for r in got:
        assert r["env"]["MASTER_ADDR"] == "10.78.0.1" and r["env"]["GLOO_SOCKET_IFNAME"] == netns_hosts.IFACE
        assert (r["detect"]["node_rank"], r["detect"]["local_size"]) == (r["rank"], 1)


def test_remote_failure_ends_local_and_remote_ranks(two_hosts):
    token = uuid.uuid4().hex
    started = time.time()
    proc = perseusrun(_args(two_hosts, 4, 2, [str(SCRIPTS / "crash.py"), "--crash-rank", "2", "--code", "5",
                                              "--then", "sleep", "--token", token]),
                      env={"PERSEUS_GLOO_NETWORK_INTERFACE": netns_hosts.IFACE, "GLOO_TIMEOUT_SECONDS": "30"},
                      prefix=two_hosts.in_ns(0), timeout=240)
    assert proc.returncode == 5, (proc.stdout, proc.stderr)
    assert "rank 2 on 10.78.0.2 exited with code 5" in proc.stderr
    crash_at = float([l for l in rank_lines(proc.stdout)["2"] if l.startswith("CRASH_AT")][0].split()[1])
    assert started < crash_at and time.time() - crash_at < 30, "ended within GLOO_TIMEOUT_SECONDS of the crash"
    time.sleep(0.5)
    assert processes_with(token) == [], "no rank left on either host"
    assert two_hosts.pids_in(1) == [two_hosts.sshds[0].pid] or all(
        p == two_hosts.sshds[0].pid or "sshd" in open("/proc/{}/comm".format(p)).read() for p in two_hosts.pids_in(1)), \
        "only sshd is left in the second namespace"


def test_unreachable_ssh_port_fails_fast_with_a_hint(two_hosts):
    token = uuid.uuid4().hex
    started = time.time()
    proc = perseusrun(["-np", "2", "-H", "10.78.0.1:1,10.78.0.2:1", "-p", "36667", "--ssh-config", two_hosts.ssh_config,
                       "--", PYTHON, "-c", "import time; time.sleep(120)", token], prefix=two_hosts.in_ns(0), timeout=120)
    assert proc.returncode == 255, proc.stderr
    assert "rank 1 on 10.78.0.2 exited with code 255 (ssh's own failure code: check `ssh -p 36667 10.78.0.2 true`" in proc.stderr
    assert "Connection refused" in proc.stderr  # ssh's own message, prefixed as rank 1's stderr
    assert time.time() - started < 60
    time.sleep(0.2)
    assert processes_with(token) == []
