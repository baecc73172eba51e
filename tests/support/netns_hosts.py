"""N "hosts" on this machine: network namespaces on one bridge. Host i has the address 10.78.0.(i+1)/24 on an
interface named pten0; the bridge lives in a namespace of its own (nothing is added to the test machine's
network). Host 0 is where a test runs perseusrun; every other host runs a real sshd (Debian openssh-server) on
SSH_PORT inside its own namespace (not a port of the test machine), with host and user keys generated for the
test. stop() removes everything: call it on every exit path (start() does when it fails half-way)."""

import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

SSH_PORT = 36666  # what the seed's platforms use (run_mpi.sh: MY_SSHD_PORT); inside each namespace
IFACE = "pten0"
SUBNET = "10.78.0."
SSHD_START_SECONDS = 20


@dataclass
class Hosts:
    names: List[str]  # the hosts' namespaces; names[0] is perseusrun's (no sshd)
    switch: str  # the namespace that holds the bridge
    ssh_config: str
    sshds: List["subprocess.Popen"] = field(default_factory=list)  # sshds[i - 1] serves host i

    @property
    def addrs(self) -> List[str]:
        return [address(i) for i in range(len(self.names))]

    def in_ns(self, i: int) -> List[str]:
        """The argv prefix that runs a command in host i's namespace."""
        return ["ip", "netns", "exec", self.names[i]]

    def netns_inode(self, i: int) -> int:
        return os.stat("/run/netns/{}".format(self.names[i])).st_ino

    def pids_in(self, i: int) -> List[int]:
        return _pids(self.names[i])


def address(i: int) -> str:
    return SUBNET + str(i + 1)


def missing_requirements() -> str:
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return "{} is not installed".format(tool)
    if not os.path.exists("/usr/sbin/sshd"):
        return "sshd is not installed (apt-get install openssh-server)"
    return ""


def _run(*argv: str) -> None:
    done = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if done.returncode != 0:
        raise RuntimeError("`{}` failed (code {}): {}".format(" ".join(argv), done.returncode, done.stdout.strip()))


def _pids(ns: str) -> List[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         universal_newlines=True).stdout
    return [int(p) for p in out.split()]


def start(work: Path, count: int = 2) -> Hosts:
    """`count` hosts (at least 2), their namespaces and sshds running; keys and configs under `work`."""
    if count < 2 or count > 250:
        raise ValueError("netns_hosts.start: count {} is not in 2..250".format(count))
    tag = "{}_{}".format(os.getpid(), uuid.uuid4().hex[:6])
    hosts = Hosts(["perseus_{}_{}".format(i, tag) for i in range(count)], "perseus_sw_" + tag,
                  str(work / "ssh_config"))
    try:
        _network(hosts)
        _keys(work, hosts.addrs[1:])
        for i in range(1, count):
            hosts.sshds.append(_sshd(work, hosts, i))
        _wait_listening(work, hosts)
    except BaseException:
        stop(hosts)
        raise
    return hosts


def _network(hosts: Hosts) -> None:
    sw = hosts.switch
    _run("ip", "netns", "add", sw)
    _run("ip", "-n", sw, "link", "add", "pbr", "type", "bridge")
    _run("ip", "-n", sw, "link", "set", "pbr", "up")
    for i, ns in enumerate(hosts.names):
        _run("ip", "netns", "add", ns)
        port = "h{}".format(i)  # the bridge's end of host i's veth pair, inside the switch namespace
        _run("ip", "-n", sw, "link", "add", port, "type", "veth", "peer", "name", IFACE, "netns", ns)
        _run("ip", "-n", sw, "link", "set", port, "master", "pbr")
        _run("ip", "-n", sw, "link", "set", port, "up")
        _run("ip", "-n", ns, "addr", "add", address(i) + "/24", "dev", IFACE)
        _run("ip", "-n", ns, "link", "set", IFACE, "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")


def _keys(work: Path, remote: List[str]) -> None:
    for key in ("host_key", "user_key"):
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "perseus-test", "-f", str(work / key))
    (work / "authorized_keys").write_text((work / "user_key.pub").read_text())
    host_key = (work / "host_key.pub").read_text().strip()
    (work / "known_hosts").write_text("".join("[{}]:{} {}\n".format(a, SSH_PORT, host_key) for a in remote))
    (work / "ssh_config").write_text("\n".join([
        "Host *", "  IdentityFile {}".format(work / "user_key"), "  IdentitiesOnly yes",
        "  UserKnownHostsFile {}".format(work / "known_hosts"), "  StrictHostKeyChecking yes", ""]))
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory


def _sshd(work: Path, hosts: Hosts, i: int) -> "subprocess.Popen":
    config = work / "sshd_config.{}".format(i)
    config.write_text("\n".join([
        "Port {}".format(SSH_PORT), "ListenAddress {}".format(address(i)), "HostKey {}".format(work / "host_key"),
        "AuthorizedKeysFile {}".format(work / "authorized_keys"), "PermitRootLogin prohibit-password",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
        "PidFile {}".format(work / "sshd.{}.pid".format(i)), ""]))
    with open(str(work / "sshd.{}.log".format(i)), "wb") as log:
        return subprocess.Popen(hosts.in_ns(i) + ["/usr/sbin/sshd", "-D", "-e", "-f", str(config)],
                                stdout=log, stderr=subprocess.STDOUT)


def _wait_listening(work: Path, hosts: Hosts) -> None:
    deadline = time.monotonic() + SSHD_START_SECONDS
    for i, sshd in enumerate(hosts.sshds, start=1):
        log = work / "sshd.{}.log".format(i)
        while b"Server listening" not in log.read_bytes():
            if sshd.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("sshd in {} did not start within {} s: {}".format(
                    hosts.names[i], SSHD_START_SECONDS, log.read_text()))
            time.sleep(0.05)


def stop(hosts: Hosts) -> None:
    """Ends the sshds and every process left in the namespaces, then removes the namespaces (their links go
    with them). Safe on a half-started Hosts."""
    for sshd in hosts.sshds:
        if sshd.poll() is None:
            sshd.terminate()
    for sshd in hosts.sshds:
        try:
            sshd.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sshd.kill()
            sshd.wait()
    for ns in hosts.names + [hosts.switch]:
        for pid in _pids(ns):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        subprocess.run(["ip", "netns", "del", ns], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def left_over(hosts: Hosts) -> List[str]:
    """The namespaces of `hosts` that still exist (none after stop())."""
    return [ns for ns in hosts.names + [hosts.switch] if os.path.exists("/run/netns/" + ns)]
