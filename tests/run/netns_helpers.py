"""Two "hosts" on this machine: network namespaces joined by a veth pair (10.78.0.1/24 and 10.78.0.2/24,
the interface named pten0 on both), with a real sshd (Debian openssh-server) in the second one on a
non-default port, and host/user keys generated for the test. Everything is removed afterwards."""

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List

SSH_PORT = 36666  # what the seed's platforms use (run_mpi.sh: MY_SSHD_PORT)
IFACE = "pten0"


@dataclass
class TwoHosts:
    ns_a: str
    ns_b: str
    addr_a: str
    addr_b: str
    ssh_config: str
    sshd: "subprocess.Popen"

    def in_a(self) -> List[str]:
        return ["ip", "netns", "exec", self.ns_a]

    def netns_inode(self, ns: str) -> int:
        return os.stat("/run/netns/{}".format(ns)).st_ino

    def pids_in_b(self) -> List[int]:
        out = subprocess.run(["ip", "netns", "pids", self.ns_b], stdout=subprocess.PIPE, universal_newlines=True).stdout
        return [int(p) for p in out.split()]


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
    subprocess.run(list(argv), check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def start(work: Path) -> TwoHosts:
    tag = str(os.getpid())
    ns_a, ns_b = "perseus_a_" + tag, "perseus_b_" + tag
    veth_a, veth_b = "pva" + tag[-8:], "pvb" + tag[-8:]
    _run("ip", "netns", "add", ns_a)
    _run("ip", "netns", "add", ns_b)
    _run("ip", "link", "add", veth_a, "type", "veth", "peer", "name", veth_b)
    for ns, veth, addr in ((ns_a, veth_a, "10.78.0.1/24"), (ns_b, veth_b, "10.78.0.2/24")):
        _run("ip", "link", "set", veth, "netns", ns)
        _run("ip", "-n", ns, "link", "set", veth, "name", IFACE)
        _run("ip", "-n", ns, "addr", "add", addr, "dev", IFACE)
        _run("ip", "-n", ns, "link", "set", IFACE, "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")
    for key in ("host_key", "user_key"):
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "perseus-test", "-f", str(work / key))
    (work / "authorized_keys").write_text((work / "user_key.pub").read_text())
    (work / "known_hosts").write_text("[10.78.0.2]:{} {}".format(SSH_PORT, (work / "host_key.pub").read_text()))
    (work / "sshd_config").write_text("\n".join([
        "Port {}".format(SSH_PORT), "ListenAddress 10.78.0.2", "HostKey {}".format(work / "host_key"),
        "AuthorizedKeysFile {}".format(work / "authorized_keys"), "PermitRootLogin prohibit-password",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
        "PidFile {}".format(work / "sshd.pid"), ""]))
    (work / "ssh_config").write_text("\n".join([
        "Host *", "  IdentityFile {}".format(work / "user_key"), "  IdentitiesOnly yes",
        "  UserKnownHostsFile {}".format(work / "known_hosts"), "  StrictHostKeyChecking yes", ""]))
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
    log = open(str(work / "sshd.log"), "wb")
    sshd = subprocess.Popen(["ip", "netns", "exec", ns_b, "/usr/sbin/sshd", "-D", "-e", "-f", str(work / "sshd_config")],
                            stdout=log, stderr=subprocess.STDOUT)
    hosts = TwoHosts(ns_a, ns_b, "10.78.0.1", "10.78.0.2", str(work / "ssh_config"), sshd)
    deadline = time.monotonic() + 20
    while b"Server listening" not in (work / "sshd.log").read_bytes():
        if sshd.poll() is not None or time.monotonic() > deadline:
            stop(hosts)
            raise RuntimeError("sshd did not start: " + (work / "sshd.log").read_text())
        time.sleep(0.05)
    return hosts


def stop(hosts: TwoHosts) -> None:
    if hosts.sshd.poll() is None:
        hosts.sshd.terminate()
        try:
            hosts.sshd.wait(timeout=10)
        except subprocess.TimeoutExpired:
            hosts.sshd.kill()
            hosts.sshd.wait()
    for ns in (hosts.ns_a, hosts.ns_b):
        for pid in subprocess.run(["ip", "netns", "pids", ns], stdout=subprocess.PIPE, universal_newlines=True).stdout.split():
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
        subprocess.run(["ip", "netns", "del", ns], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
