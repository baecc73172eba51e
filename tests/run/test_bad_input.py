"""Bad input: a clear message naming the problem, a non-zero exit (2 for usage errors), nothing started."""

import socket

import pytest

from run_helpers import PYTHON, perseusrun

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


@pytest.fixture
def busy_port():
    s = socket.socket()
    s.bind(("", 0))
    s.listen(1)
    yield s.getsockname()[1]
    s.close()


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# (id, argv before the command, environment, fragments of the message)
CASES = [
    ("slots-not-a-number", ["-np", "2", "-H", "host1:abc"], {}, ["'host1:abc'", "positive integer"]),
    ("host-syntax", ["-np", "2", "-H", "bad host!:2"], {}, ["'bad host!:2' is not a host name or IP address"]),
    ("empty-host-entry", ["-np", "2", "-H", "10.0.0.1:1,"], {}, ["empty host entry"]),
    ("np-exceeds-slots", ["-np", "4", "-H", "localhost:2"], {}, ["-np 4 needs 4 slots but -H gives only 2 (localhost:2)"]),
    ("np-zero", ["-np", "0"], {}, ["-np 0", "at least 1"]),
    ("np-missing", ["-H", "localhost:2"], {}, ["-np"]),
    ("gloo-and-mpi", ["--gloo", "--mpi", "-np", "2"], {}, ["--mpi", "not allowed with argument --gloo"]),
    ("hosts-and-hostfile", ["-np", "2", "-H", "localhost:2", "--hostfile", "/etc/hostname"], {}, ["not allowed with argument"]),
    ("hostfile-missing", ["-np", "2", "--hostfile", "/nonexistent/hosts"], {}, ["--hostfile /nonexistent/hosts: No such file"]),
    ("perseus-port-not-a-number", ["-np", "2"], {"PERSEUS_MASTER_PORT": "abc"}, ["PERSEUS_MASTER_PORT='abc' is not a port number"]),
    ("master-port-out-of-range", ["-np", "2"], {"MASTER_PORT": "99999"}, ["MASTER_PORT=99999 is out of range"]),
    ("ports-collide", ["-np", "2"], {"MASTER_PORT": "29555", "PERSEUS_MASTER_PORT": "29555"},
     ["MASTER_PORT and PERSEUS_MASTER_PORT are both 29555", "different ports"]),
    # one rule for GLOO_TIMEOUT_SECONDS: the runtime's (perseus.config), in its words
    ("gloo-timeout", ["-np", "2"], {"GLOO_TIMEOUT_SECONDS": "-5"}, ["GLOO_TIMEOUT_SECONDS='-5' is not allowed: expected an integer >= 1"]),
    ("gloo-timeout-fraction", ["-np", "2"], {"GLOO_TIMEOUT_SECONDS": "1.5"}, ["GLOO_TIMEOUT_SECONDS='1.5' is not allowed: expected an integer >= 1", "the ranks would refuse it"]),
    ("unknown-nic", ["-np", "2"], {"PERSEUS_GLOO_NETWORK_INTERFACE": "nosuchnic0"}, ["PERSEUS_GLOO_NETWORK_INTERFACE=nosuchnic0", "no network interface nosuchnic0"]),
    ("nic-conflict", ["-np", "2"], {"PERSEUS_NCCL_NETWORK_INTERFACE": "lo", "NCCL_SOCKET_IFNAME": "eth7"}, ["PERSEUS_NCCL_NETWORK_INTERFACE=lo and NCCL_SOCKET_IFNAME=eth7"]),
    ("x-rank-variable", ["-np", "2", "-x", "RANK=3"], {}, ["-x RANK: perseusrun sets RANK for every rank"]),
    ("x-unset-variable", ["-np", "2", "-x", "PERSEUS_TEST_UNSET_VARIABLE"], {}, ["PERSEUS_TEST_UNSET_VARIABLE is not set here"]),
    ("x-bad-name", ["-np", "2", "-x", "1BAD=x"], {}, ["-x '1BAD': not a variable name"]),
    ("unknown-option", ["-np", "2", "--frobnicate"], {}, ["unrecognized arguments: --frobnicate"]),
    ("loopback-in-multi-host", ["-np", "2", "-H", "localhost:1,10.255.0.2:1"], {}, ["localhost is a loopback name but the job spans 2 hosts"]),
    ("duplicate-host", ["-np", "2", "-H", "10.255.0.2:1,10.255.0.2:1"], {}, ["host 10.255.0.2 is listed twice"]),
    ("json-without-dry-run", ["-np", "2", "--json"], {}, ["--json prints the plan and goes with --dry-run"]),
    ("ssh-port-range", ["-np", "2", "--ssh-port", "70000"], {}, ["--ssh-port 70000: not a port number"]),
    ("mpi-args-without-mpi", ["-np", "2", "--mpi-args", "--mca x y"], {}, ["--mpi-args is for --mpi runs"]),
    ("perseus-variable-out-of-range", ["-np", "2"], {"PERSEUS_ALLREDUCE_DTYPE": "7"}, ["PERSEUS_ALLREDUCE_DTYPE='7' is not allowed"]),
    ("identity-file-missing", ["-np", "2", "--ssh-identity-file", "/nonexistent/key"], {}, ["--ssh-identity-file /nonexistent/key: No such file"]),
]


@pytest.mark.parametrize("name,args,env,fragments", CASES, ids=[c[0] for c in CASES])
def test_usage_errors(name, args, env, fragments, tmp_path):
    marker = tmp_path / "started"
    proc = perseusrun(args + ["--", PYTHON, "-c", "open({!r}, 'w').close()".format(str(marker))], env=env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert any(line.startswith("perseusrun: error: ") for line in proc.stderr.splitlines()), proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, (fragment, proc.stderr)
    assert not marker.exists(), "nothing may start after a usage error"
    assert proc.stdout == ""


def test_missing_command():
    proc = perseusrun(["-np", "2"])
    assert proc.returncode == 2
    assert "no command to run; write it after the options, e.g. perseusrun -np 2 -- python train.py" in proc.stderr


def test_port_in_use(busy_port, tmp_path):
    for name in ("MASTER_PORT", "PERSEUS_MASTER_PORT"):
        proc = perseusrun(["-np", "2", "--", "true"], env={name: str(busy_port)})
        assert proc.returncode == 2
        assert "{}={}: the port is already in use on this machine".format(name, busy_port) in proc.stderr


def test_hostfile_bad_line(tmp_path):
    path = _write(tmp_path, "hosts", "# two machines\n10.0.0.1 slots=2\n10.0.0.2 slots=two\n")
    proc = perseusrun(["-np", "2", "--hostfile", path, "--", "true"])
    assert proc.returncode == 2
    assert "{}:3: the slots of '10.0.0.2:two' must be a positive integer".format(path) in proc.stderr


def test_command_not_found():
    proc = perseusrun(["-np", "2", "--", "no-such-command-perseus"])
    assert proc.returncode == 127
    assert "perseusrun: no-such-command-perseus: command not found on PATH" in proc.stderr


def test_mpi_without_mpirun(tmp_path):
    proc = perseusrun(["--mpi", "-np", "2", "--", "true"], env={"PATH": str(tmp_path)})
    assert proc.returncode == 2
    assert "--mpi needs Open MPI's mpirun on PATH (Debian/Ubuntu: apt-get install openmpi-bin" in proc.stderr
