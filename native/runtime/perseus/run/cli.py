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


def _elastic(options: "args.Options") -> int:
    """An elastic job (perseus/run/elastic): its checks, --dry-run's settings, or the driver."""
    from .elastic import driver

    for message in environment.variable_messages(os.environ):
        print("perseusrun: " + message, file=sys.stderr)
    environment.validate_perseus_variables(os.environ)
    environment.exports(options.exports, os.environ)
    environment.gloo_timeout(os.environ)
    if shutil.which(options.command[0]) is None:
        raise CommandNotFound("perseusrun: {}: command not found on PATH".format(options.command[0]))
    if options.dry_run:
        settings = {"elastic": True, "np": options.np, "min_np": options.min_np, "max_np": options.max_np,
                    "host_discovery_script": options.host_discovery_script, "slots_per_host": options.slots_per_host,
                    "hosts": None if options.fixed_hosts is None else ["{}:{}".format(h.host, h.slots) for h in options.fixed_hosts],
                    "elastic_timeout": options.elastic_timeout, "reset_limit": options.reset_limit,
                    "blacklist_cooldown_range": options.cooldown_range, "command": options.command}
        if options.json:
            print(json.dumps(settings, indent=2))
        else:
            print("perseusrun elastic plan (workers are placed as discovery finds hosts, at run time):")
            for key, value in settings.items():
                print("  {}: {}".format(key, value))
        return 0
    if options.log_dir:
        try:
            os.makedirs(options.log_dir, exist_ok=True)
        except OSError as exc:
            raise UsageError("--log-dir {}: cannot create it ({})".format(options.log_dir, exc.strerror or exc)) from None
    return driver.Driver(options, os.environ).run()


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        options = args.parse(argv)
        for note in options.notes:
            print("perseusrun: note: " + note, file=sys.stderr)
        if options.elastic:
            return _elastic(options)
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
