"""The install script's exit codes: the one table its shell part, its --help, its Python part and the
docs' list are made from."""
from collections import namedtuple

ExitCode = namedtuple("ExitCode", "name code meaning")

# In --help order. 0 is success of every kind; 1 is never used on purpose (an unexpected crash).
EXIT_CODES = (
    ExitCode("ok", 0, "installed, already up to date, uninstalled, or the decision was made (--dry-run)"),
    ExitCode("usage", 2, "bad arguments"),
    ExitCode("no_python", 3, "no Python 3.6+ (the given command is missing, is not Python, or is too old)"),
    ExitCode("no_pip", 4, "pip is not installed for that Python"),
    ExitCode("no_framework", 5, "no framework (or not the one asked for) is installed for that Python"),
    ExitCode("unsupported", 6, "this release has no build for an installed framework; the nearest cells are listed"),
    ExitCode("externally_managed", 7, "a system Python that refuses pip (PEP 668): use a virtual environment"),
    ExitCode("untrusted_mirror", 8, "the mirror is plain HTTP on another host, not a URL or folder, or its TLS "
             "certificate does not verify"),
    ExitCode("network", 9, "the mirror cannot be reached or read (after retries)"),
    ExitCode("checksum", 10, "a downloaded wheel's size or sha256 differs from the mirror's manifest; nothing was "
             "installed"),
    ExitCode("mirror_mismatch", 11, "the mirror's manifest disagrees with this script's table, or lacks the chosen "
             "wheel"),
    ExitCode("install_failed", 12, "pip or the import check failed; the environment was restored as it was"),
)
CODE = dict((e.name, e.code) for e in EXIT_CODES)
