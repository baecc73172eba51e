"""The fast tier (`bash dev/test.sh --fast`, AIACC_FAST=1): every test not marked `integration`, with process
starts and socket binds refused, so that a slow test cannot hide in it. A test that needs either belongs to the
integration tier: `pytestmark = pytest.mark.integration` in its module."""

import os
import socket
import subprocess

FAST = os.environ.get("AIACC_FAST") == "1"


class FastTierViolation(RuntimeError):
    """A test of the fast tier started a process or bound a socket."""


def _refuser(what):
    def refuse(*args, **kwargs):
        raise FastTierViolation(
            "{} in the fast tier (bash dev/test.sh --fast): a test that starts processes or binds sockets is an "
            "integration test; mark its module with `pytestmark = pytest.mark.integration`".format(what))
    return refuse


def install_guards():
    """Refuse process starts (subprocess, fork, spawn, system) and socket binds for the rest of this process."""
    subprocess.Popen._execute_child = _refuser("a process start (subprocess)")
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            setattr(os, name, _refuser("a process start (os.{})".format(name)))
    socket.socket.bind = _refuser("a socket bind")
