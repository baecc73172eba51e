"""The names of PERSEUS_* variables set in an environment that perseus does not read as declared: an
unknown (probably misspelt) name gets a warning with "did you mean", an accepted alias a note.
`import perseus`, perseusrun and doctor all ask this module."""

import difflib
import os
import warnings
from typing import List, Mapping, Optional, Tuple

from ._frameworks import FRAMEWORKS
from .config import _ALIASES, VARIABLE_NAMES


def unknown_variables(environ: Mapping[str, str]) -> List[Tuple[str, Optional[str]]]:
    """(name, closest known name or None) of every PERSEUS_* variable set that perseus does not know."""
    known = sorted(VARIABLE_NAMES | set(_ALIASES))
    found = []
    for name in sorted(environ):
        if (name.startswith("PERSEUS_") and name not in known and name not in NOT_CONFIGURATION
                and not name.startswith(TEST_PREFIX)):
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
            found.append((name, close[0] if close else None))
    return found


# PERSEUS_* names that are not settings of a job: what perseusrun tells the ranks, and the inputs of the
# build tool, CI jobs, image builds and each framework's binding build (a job may inherit them harmlessly).
NOT_CONFIGURATION = frozenset({
    "PERSEUS_LAUNCHER", "PERSEUS_RELEASE", "PERSEUS_FRAMEWORK", "PERSEUS_FRAMEWORK_VERSION",
    "PERSEUS_CUDA", "PERSEUS_MIRROR", "PERSEUS_WHEEL_SHA256", "PERSEUS_WHEELS",
    "PERSEUS_STORE_ADDR",  # perseusrun: the rendezvous store it serves (perseus/run/store.py)
    "PERSEUS_ELASTIC_DRIVER", "PERSEUS_ELASTIC_WORKER",  # elastic perseusrun (perseus/horovod_kit/elastic_worker.py)
} | {name for row in FRAMEWORKS for name in row["build_variables"]})  # PERSEUS_TORCH_DIR, ...: from the adapters
TEST_PREFIX = "PERSEUS_TEST_"  # the native tests' own inputs


class UnknownVariableWarning(UserWarning):
    """A PERSEUS_* variable is set that perseus does not know: probably misspelt."""


def unknown_variable_messages(environ: Mapping[str, str]) -> List[str]:
    messages = []
    for name, close in unknown_variables(environ):
        hint = "; did you mean {}?".format(close) if close else " (perseus reads: see `perseus doctor`)"
        messages.append("{} is set but perseus has no such variable, so it changes nothing{}".format(name, hint))
    return messages


def warn_unknown(environ: Optional[Mapping[str, str]] = None) -> None:
    """Warn about every unknown PERSEUS_* name (import perseus, perseusrun and doctor call this)."""
    for message in unknown_variable_messages(os.environ if environ is None else environ):
        warnings.warn(message, UnknownVariableWarning, stacklevel=2)


def alias_notes(environ: Mapping[str, str]) -> List[str]:
    """A note for every variable set under an accepted alias (e.g. the 1.5.0 manual's spelling)."""
    notes = []
    for alias, spec in sorted(_ALIASES.items()):
        if environ.get(alias, "").strip():
            also = " (ignored: {} is set too)".format(spec.name) if environ.get(spec.name, "").strip() else ""
            notes.append("{} is read as {}, its documented name{}".format(alias, spec.name, also))
    return notes
