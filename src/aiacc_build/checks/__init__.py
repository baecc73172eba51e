"""Checks of rendered artifacts against facts outside this repository's own code.

`aiacc-build check conda`: every conda environment file against a committed table of which packages
exist on which channel (matrix/facts/conda/packages.yaml), in the conventions of each era; the LOCAL cell's pip
part installed for real. `aiacc-build check ci`: every CI job's cibuildwheel selector against the
identifiers the release's own cibuildwheel version prints, its builder image against the bake file,
its cibuildwheel pin against the release.
"""

from .findings import CheckReport, ChecksFailedError, Finding

__all__ = ["CheckReport", "ChecksFailedError", "Finding"]
