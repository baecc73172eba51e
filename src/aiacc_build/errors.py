"""Error classes of the build tool, one per exit code.

Every error the user can cause carries a message that names the problem and the fix; the CLI prints
it without a traceback and exits with the class's code, so scripts can tell failures apart.
"""

from __future__ import annotations


class AiaccError(Exception):
    """Base class: an expected failure with a user-facing message."""

    exit_code = 1
    summary = "unexpected error"


class ConfigurationError(AiaccError):
    """Bad command-line arguments or options (beyond what click reports itself)."""

    exit_code = 2
    summary = "bad arguments or options"


class MatrixError(AiaccError):
    """A release matrix file is invalid: the message names the file, the line and the problem."""

    exit_code = 3
    summary = "invalid release matrix"

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class UnsupportedCellError(AiaccError):
    """A requested cell (framework, version, CUDA, Python) is not in the matrix."""

    exit_code = 4
    summary = "cell not in the matrix"


class RegistryError(AiaccError):
    """The package registry could not be read (network, HTTP status, unexpected JSON)."""

    exit_code = 5
    summary = "package registry unreachable or unreadable"


class BuildError(AiaccError):
    """A cell's build, repair or post-build test failed."""

    exit_code = 6
    summary = "a build, repair or post-build test failed"


class StaleOutputError(AiaccError):
    """Committed data differs from what the tool would write (e.g. `matrix sync --check`)."""

    exit_code = 7
    summary = "committed data is stale"


class ChecksFailedError(AiaccError):
    """A check found rendered files that break a rule (the findings were printed before)."""

    exit_code = 8
    summary = "a check of rendered files failed"


class HostServiceError(AiaccError):
    """A service or tool this machine must provide could not be started or used (dockerd, the local
    registry, debootstrap): the message says what to install or start."""

    exit_code = 9
    summary = "a host service or tool is missing (dockerd, registry, debootstrap)"


def exit_codes() -> dict[int, str]:
    """Every exit code of `aiacc-build` and what it means (for --help and docs/commands.md)."""
    return {0: "success", **{cls.exit_code: cls.summary for cls in EXIT_CODE_CLASSES}}


# One class per exit code; an error elsewhere in the tool subclasses the one whose meaning it has.
EXIT_CODE_CLASSES: tuple[type[AiaccError], ...] = (
    AiaccError,
    ConfigurationError,
    MatrixError,
    UnsupportedCellError,
    RegistryError,
    BuildError,
    StaleOutputError,
    ChecksFailedError,
    HostServiceError,
)
