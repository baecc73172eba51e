"""`perseusrun`: the launcher of AIACC-Training jobs (see `perseusrun -h`, README.md beside this file)."""

import json
import os
import shutil
import sys
from typing import List, Optional

from . import args, environment, plan as planning, store as served_store
from .errors import CommandNotFound, UsageError
from .mpi import check_open_mpi
from .supervisor import Supervisor


def _prepare(job: planning.JobPlan) -> None:
    """Checks that need the machine, made before anything starts."""
    if job.mode == "mpi":
        check_open_mpi()
    if any(r.launch == "ssh" for r in job.ranks) and shutil.which("ssh") is None:
        raise UsageError("remote hosts are started over ssh, but there is no ssh client on PATH "
                         "(apt-get install openssh-client), or use --mpi")
    if job.log_dir and job.mode == "gloo":
        try:
            for r in job.ranks:
                os.makedirs(os.path.join(job.log_dir, "rank.{}".format(r.rank)), exist_ok=True)
        except OSError as exc:
            raise UsageError("--log-dir {}: cannot create it ({})".format(job.log_dir, exc.strerror or exc)) from None


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        options = args.parse(argv)
        for note in options.notes:
            print("perseusrun: note: " + note, file=sys.stderr)
        job = planning.build(options, os.environ)
        for message in environment.variable_messages(os.environ):
            print("perseusrun: " + message, file=sys.stderr)
        if options.verbose and not options.dry_run:
            print(planning.format_text(job), file=sys.stderr)
        if options.dry_run:
            print(json.dumps(job.to_dict(), indent=2) if options.json else planning.format_text(job))
            return 0
        _prepare(job)
    except (UsageError, CommandNotFound) as exc:
        message = str(exc)
        print(message if message.startswith("perseusrun:") else "perseusrun: error: " + message, file=sys.stderr)
        if isinstance(exc, UsageError):
            print("usage: see perseusrun -h", file=sys.stderr)
        return exc.exit_code
    environ = {k: v for k, v in os.environ.items() if k != served_store.VARIABLE}  # an outer job's is not ours
    store = None
    if job.master_local:
        store, why_not = served_store.start()
        if store is None and why_not:
            print("perseusrun: note: rank 0 serves the engine's rendezvous store ({})".format(why_not), file=sys.stderr)
        elif store is not None:
            if job.held_port is not None:
                job.held_port.release()  # the plan is built again, with the store's address
            job = planning.build(options, environ, "{}:{}".format(job.master_addr, store.port))
    try:
        return Supervisor(job, environ).run()
    finally:
        if store is not None:
            store.stop()


if __name__ == "__main__":
    sys.exit(main())
