"""Runs the planned processes: prefixed output and log files, fail fast, Ctrl-C ends every rank.

Every child runs in its own session (process group), so a terminal's Ctrl-C reaches perseusrun only,
and perseusrun decides: SIGTERM to every process group, SIGKILL after the grace period. ssh ranks are
ended by closing their stdin first (the remote watchdog then terminates the remote rank and ssh exits
with its status), then by signalling the ssh client.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from typing import BinaryIO, Dict, List, Optional

from .children import die_with_parent
from .plan import JobPlan, RankPlan

POLL_SECONDS = 0.05


class _Output:
    """Copies one child stream, line by line, to the console with a `[rank]<stdout>:` prefix and to a log file."""

    def __init__(self, stream: BinaryIO, console: BinaryIO, prefix: Optional[bytes], log: Optional[BinaryIO], lock: threading.Lock):
        self.thread = threading.Thread(target=self._pump, args=(stream, console, prefix, log, lock), daemon=True)

    @staticmethod
    def _pump(stream: BinaryIO, console: BinaryIO, prefix: Optional[bytes], log: Optional[BinaryIO], lock: threading.Lock) -> None:
        for line in iter(stream.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"
            with lock:
                console.write((prefix or b"") + line)
                console.flush()
            if log is not None:
                log.write(line)
                log.flush()
        stream.close()
        if log is not None:
            log.close()


class _Child:
    """One started process; a waiter thread records when it exits, so that the FIRST failure is known
    even when the others fail a few milliseconds later because of it (peers see the connection close)."""

    def __init__(self, rank: Optional[RankPlan], popen: "subprocess.Popen"):
        self.rank = rank
        self.popen = popen
        self.returncode: Optional[int] = None
        self.exited_at: Optional[float] = None
        self.outputs: List[_Output] = []
        self.waiter = threading.Thread(target=self._wait, daemon=True)

    def _wait(self) -> None:
        code = self.popen.wait()
        self.exited_at = time.monotonic()
        self.returncode = code


def exit_status(returncode: int) -> int:
    """A child's exit code as a shell reports it: 128 + N for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


class Supervisor:
    def __init__(self, plan: JobPlan, environ: Dict[str, str]):
        self.plan = plan
        self.environ = environ
        self.children: List[_Child] = []
        self.lock = threading.Lock()
        self.signalled: Optional[int] = None
        self.signal_reported = False
        self.failure: Optional[_Child] = None
        self.kill_at: Optional[float] = None
        self.started_at = time.monotonic()

    # -- start ---------------------------------------------------------------------------------------------
    def _start_rank(self, r: RankPlan) -> _Child:
        env = dict(self.environ, **r.env) if r.launch == "local" else dict(self.environ)
        popen = subprocess.Popen(r.command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.PIPE if r.launch == "ssh" else subprocess.DEVNULL,
                                 start_new_session=True, preexec_fn=die_with_parent)
        return _Child(r, popen)

    def _attach_output(self, child: _Child) -> None:
        r = child.rank
        for name, stream, console in (("stdout", child.popen.stdout, sys.stdout.buffer), ("stderr", child.popen.stderr, sys.stderr.buffer)):
            log = None
            if self.plan.log_dir:
                folder = os.path.join(self.plan.log_dir, "rank.{}".format(r.rank))
                os.makedirs(folder, exist_ok=True)
                log = open(os.path.join(folder, name), "wb")
            prefix = "[{}]<{}>:".format(r.rank, name).encode()
            output = _Output(stream, console, prefix, log, self.lock)
            child.outputs.append(output)
            output.thread.start()

    def _start(self) -> None:
        if self.plan.mpirun:
            # mpirun prefixes (--tag-output) and writes the log files (--output-filename) itself.
            popen = subprocess.Popen(self.plan.mpirun, env=self.environ, stdin=subprocess.DEVNULL,
                                     start_new_session=True, preexec_fn=die_with_parent)
            self.children.append(_Child(None, popen))
        else:
            for r in self.plan.ranks:  # all processes first: preexec_fn must not run while threads exist
                self.children.append(self._start_rank(r))
            for child in self.children:
                self._attach_output(child)
        for child in self.children:
            child.waiter.start()

    # -- stop ----------------------------------------------------------------------------------------------
    def _signal_group(self, child: _Child, signum: int) -> None:
        try:
            os.killpg(child.popen.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def _terminate_all(self) -> None:
        if self.kill_at is not None:
            return
        self.kill_at = time.monotonic() + self.plan.terminate_grace()
        for child in self.children:
            if child.returncode is not None:
                continue
            if child.rank is not None and child.rank.launch == "ssh" and child.popen.stdin:
                try:
                    child.popen.stdin.close()  # remote watchdog: EOF -> SIGTERM the remote rank
                except OSError:
                    pass
            else:
                self._signal_group(child, signal.SIGTERM)

    def _kill_all(self, leftovers: bool = False) -> None:
        """SIGKILL the groups of running children; with leftovers, also the groups whose leader has exited
        (a rank's own children, e.g. data loader workers, must not outlive the job)."""
        for child in self.children:
            if child.returncode is None or leftovers:
                self._signal_group(child, signal.SIGKILL)

    def _on_signal(self, signum: int, frame: object) -> None:
        # Only records: the handler runs on the main thread, which may hold the console lock (a deadlock) or be
        # inside a write to stderr (a reentrant write); _wait reports it.
        if self.signalled is None:
            self.signalled = signum

    # -- run -----------------------------------------------------------------------------------------------
    def run(self) -> int:
        handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {s: signal.signal(s, self._on_signal) for s in handled}
        try:
            self.started_at = time.monotonic()
            self._start()
            self._wait()
        finally:
            if self.plan.held_port is not None:
                self.plan.held_port.release()
            self._kill_all(leftovers=True)
            for s, handler in previous.items():
                signal.signal(s, handler)
        for child in self.children:
            child.waiter.join(timeout=2.0)
            for output in child.outputs:
                output.thread.join(timeout=2.0)
        return self._exit_code()

    def _release_port_once_served(self) -> None:
        """Let go of the MASTER_PORT perseusrun holds once rank 0 listens there, a rank has exited (nobody will
        bind it then) or GLOO_TIMEOUT_SECONDS passed (a master that never comes)."""
        held = self.plan.held_port
        if held is None or not held.held:
            return
        waited = time.monotonic() - self.started_at
        if (held.served() or any(c.exited_at is not None for c in self.children)
                or waited > self.plan.gloo_timeout_seconds):
            held.release()

    def _wait(self) -> None:
        while True:
            self._release_port_once_served()
            if self.failure is None and self.kill_at is None:
                failed = [c for c in self.children if c.exited_at is not None and c.returncode != 0]
                if failed:
                    self.failure = min(failed, key=lambda c: c.exited_at)
                    self._report_failure(self.failure)
                    self._terminate_all()
            if self.signalled is not None and not self.signal_reported:
                self.signal_reported = True
                with self.lock:
                    sys.stderr.write("perseusrun: {} received, ending all ranks\n".format(
                        signal.Signals(self.signalled).name))
                    sys.stderr.flush()
                self._terminate_all()
            if all(c.exited_at is not None for c in self.children):
                return
            if self.kill_at is not None and time.monotonic() >= self.kill_at:
                self._kill_all()
            time.sleep(POLL_SECONDS)

    def _report_failure(self, child: _Child) -> None:
        if child.rank is None:
            return
        code = child.returncode
        how = "was killed by {}".format(signal.Signals(-code).name) if code < 0 else "exited with code {}".format(code)
        if child.rank.launch == "ssh" and code == 255:
            how += " (ssh's own failure code: check `ssh{} {} true` from this host)".format(
                " -p {}".format(self.plan.ssh_port) if self.plan.ssh_port else "", child.rank.host)
        with self.lock:
            sys.stderr.write("perseusrun: rank {} on {} {}; terminating the other {} rank(s)\n".format(
                child.rank.rank, child.rank.host, how, len(self.children) - 1))
            sys.stderr.flush()

    def _exit_code(self) -> int:
        if self.failure is not None:
            return exit_status(self.failure.returncode)
        if self.signalled is not None:
            return 128 + self.signalled
        for child in self.children:
            if child.returncode:
                return exit_status(child.returncode)
        return 0
