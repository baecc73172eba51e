"""The ssh command that starts one remote rank, the way horovodrun does (ssh HOST 'cd DIR && env ... CMD'),
with a watchdog so that the remote rank ends when the connection does."""

import shlex
from typing import Dict, List, Optional

# Runs on the remote host as `sh -c WATCHDOG perseus-rank CMD...`: starts the rank in its own session
# (setsid), and when ssh's stdin reaches EOF (perseusrun closed it, or the connection died) sends the
# rank's process group SIGTERM, then SIGKILL after GRACE seconds. When the rank exits, whatever it left
# in its group is killed too: a leftover child would hold the session's output open and ssh would never
# return. Exits with the rank's status.
WATCHDOG = (
    'exec 3<&0; '
    'if command -v setsid >/dev/null 2>&1; then setsid "$@" </dev/null 3<&- & else "$@" </dev/null 3<&- & fi; '
    'c=$!; '
    '( read -r _ <&3; kill -TERM -"$c" 2>/dev/null || kill -TERM "$c" 2>/dev/null; i=0; '
    'while [ "$i" -lt {ticks} ] && kill -0 -"$c" 2>/dev/null; do sleep 0.2; i=$((i+1)); done; '
    'kill -KILL -"$c" 2>/dev/null || kill -KILL "$c" 2>/dev/null ) 2>/dev/null & '
    'w=$!; exec 3<&-; wait "$c"; s=$?; kill -KILL -"$c" 2>/dev/null; kill "$w" 2>/dev/null; exit "$s"'
)


def remote_command(workdir: str, env: Dict[str, str], command: List[str], grace_seconds: float) -> str:
    """The command line the remote login shell runs."""
    quoted_dir = shlex.quote(workdir)
    assignments = " ".join("{}={}".format(k, shlex.quote(v)) for k, v in sorted(env.items()))
    watchdog = WATCHDOG.replace("{ticks}", str(max(1, int(grace_seconds / 0.2))))
    return ("cd {dir} 2>/dev/null || echo \"perseusrun: $(hostname): no directory {dir_msg}, running in $PWD\" >&2; "
            "exec sh -c {watchdog} perseus-rank env {env} {cmd}").format(
        dir=quoted_dir, dir_msg=quoted_dir.replace('"', '\\"'), watchdog=shlex.quote(watchdog),
        env=assignments, cmd=" ".join(shlex.quote(c) for c in command))


def ssh_argv(host: str, remote: str, port: Optional[int], identity_file: Optional[str], config_file: Optional[str]) -> List[str]:
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR"]
    if config_file:
        argv += ["-F", config_file]  # the config decides host key checking
    else:
        argv += ["-o", "StrictHostKeyChecking=no"]  # as horovodrun: fresh cluster nodes are unknown hosts
    if identity_file:
        argv += ["-i", identity_file]
    if port:
        argv += ["-p", str(port)]
    return argv + [host, remote]
