"""The `aiacc-build` command line. Each command group lives in its own module and registers here.

Exit codes: aiacc_build.errors.exit_codes() (listed by `aiacc-build --help`).
"""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.text import Text

from . import __version__
from .errors import AiaccError, exit_codes

err_console = Console(stderr=True)


EXIT_CODES_HELP = "\b\nExit codes:\n" + "\n".join(f"  {code}  {text}" for code, text in exit_codes().items())


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="aiacc-build")
def cli() -> None:
    """Build, render and ship AIACC-Training for every CUDA x framework x Python cell.

    The matrix in matrix/releases/*.yaml is the one source of truth; every wheel, conda file,
    Docker image, CI job and installer entry is computed from it.
    """


def _register() -> None:
    # Imported here so that `aiacc-build --help` works even while one group fails to import.
    from .commands import register_all

    register_all(cli)


def main(argv: list[str] | None = None) -> int:
    _register()
    try:
        cli.main(args=argv, prog_name="aiacc-build", standalone_mode=False)
    except AiaccError as exc:
        err_console.print(Text("error: ", style="bold red") + Text(str(exc)), soft_wrap=True)
        return exc.exit_code
    except click.exceptions.Abort:
        err_console.print("aborted")
        return 130
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
