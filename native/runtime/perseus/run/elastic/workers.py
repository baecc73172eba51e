"""Starting and ending elastic workers: a local child of perseusrun, or a remote process over ssh (the same
watchdog as a static job's remote ranks). Output is prefixed `[host:slot]<stdout>:` (a worker's rank changes
from one generation to the next; its slot does not)."""

import os
import signal
import subprocess
import threading
from typing import Dict, List, Mapping, Optional

from ..ssh import remote_command, ssh_argv
from ..supervisor import _Child, _Output


class Worker(_Child):
    """A started worker: the supervisor's child record (exit code and time, set by its waiter thread) plus the slot."""

    def __init__(self, wid: str, host: str, slot: int, popen: "subprocess.Popen", remote: bool) -> None:
        super().__init__(None, popen)
        self.wid, self.host, self.slot, self.remote = wid, host, slot, remote

    @property
    def running(self) -> bool:
        return self.exited_at is None

    def terminate(self) -> None:
        if not self.running:
            return
        if self.remote and self.popen.stdin:
            try:
                self.popen.stdin.close()  # the remote watchdog ends the remote process
            except OSError:
                pass
        else:
            self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self.popen.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def start(wid: str, host: str, slot: int, local: bool, command: List[str], env: Dict[str, str],
          environ: Mapping[str, str], workdir: str, grace: float, ssh: Dict[str, object],
          log_dir: Optional[str], console_lock: threading.Lock) -> Worker:
    """Starts one worker and the threads copying its output."""
    import sys

    if local:
        popen = subprocess.Popen(command, env=dict(environ, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
    else:
        remote = remote_command(workdir, env, command, grace)
        argv = ssh_argv(host, remote, ssh.get("port"), ssh.get("identity_file"), ssh.get("config_file"))  # type: ignore[arg-type]
        popen = subprocess.Popen(argv, env=dict(environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.PIPE, start_new_session=True)
    worker = Worker(wid, host, slot, popen, remote=not local)
    for stream, console, name in ((popen.stdout, sys.stdout.buffer, "stdout"), (popen.stderr, sys.stderr.buffer, "stderr")):
        log = None
        if log_dir:
            folder = os.path.join(log_dir, "worker.{}".format(wid.replace(":", "_")))
            os.makedirs(folder, exist_ok=True)
            log = open(os.path.join(folder, name), "ab")
        prefix = "[{}]<{}>:".format(wid, name).encode()
        worker.outputs.append(_Output(stream, console, prefix, log, console_lock))
    for output in worker.outputs:
        output.thread.start()
    worker.waiter.start()
    return worker
