"""perseusrun's errors: each carries the exit code perseusrun ends with."""


class UsageError(Exception):
    """Bad arguments, hosts, ports or PERSEUS_* values: nothing was started. Exit code 2."""

    exit_code = 2


class CommandNotFound(Exception):
    """The command to run is not on PATH (the shell's 127)."""

    exit_code = 127
