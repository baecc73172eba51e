"""Error classes of the build tool, one per exit code.

Every error the user can cause carries a message that names the problem and the fix; the CLI prints
it without a traceback and exits with the class's code, so scripts can tell failures apart.
"""

from __future__ import annotations


class AiaccError(Exception):
    """Base class: an expected failure with a user-facing message."""

    exit_code = 1


class ConfigurationError(AiaccError):
    """Bad command-line arguments or options (beyond what click reports itself)."""

    exit_code = 2


class MatrixError(AiaccError):
    """A release matrix file is invalid: the message names the file, the line and the problem."""

    exit_code = 3

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class UnsupportedCellError(AiaccError):
    """A requested cell (framework, version, CUDA, Python) is not in the matrix."""

    exit_code = 4


class RegistryError(AiaccError):
    """The package registry could not be read (network, HTTP status, unexpected JSON)."""

    exit_code = 5


class BuildError(AiaccError):
    """A cell's build, repair or post-build test failed."""

    exit_code = 6


class StaleOutputError(AiaccError):
    """Committed data differs from what the tool would write (e.g. `matrix sync --check`)."""

    exit_code = 7
