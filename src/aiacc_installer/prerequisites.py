"""What must hold of the Python before anything is downloaded: pip may install into it, and
perseus-common's backports for an old Python are there."""
import os
import sys

from .common import fail
from .detect import externally_managed


# What perseus-common needs from an old Python beyond its standard library: (module, the first Python
# that has it). The install runs pip with --no-deps on the mirror's verified files only, so they must be
# importable already.
PREREQUISITES = (("dataclasses", (3, 7)),)


def check_prerequisites():
    """perseus-common's backports for this Python are installed (the script never reaches an index)."""
    missing = []
    for module, standard_from in PREREQUISITES:
        if sys.version_info[:2] >= standard_from:
            continue
        try:
            __import__(module)
        except ImportError:
            missing.append((module, standard_from))
    if missing:
        names = " ".join(module for module, _ in missing)
        fail("unsupported", "Python %d.%d lacks %s, which perseus needs (standard from Python %s on). This script "
             "installs only the mirror's verified wheels and never reaches a package index, so install %s first, "
             "then run the script again:\n  %s -m pip install %s" % (
                 sys.version_info[0], sys.version_info[1], ", ".join(m for m, _ in missing),
                 ".".join(str(n) for n in missing[0][1]), "it" if len(missing) == 1 else "them", sys.executable, names))


def check_pip():
    """pip exists for this Python and may install into it (PEP 668)."""
    try:
        import importlib.util
        has_pip = importlib.util.find_spec("pip") is not None
    except ImportError:
        has_pip = False
    if not has_pip:
        fail("no_pip", "pip is not installed for %s. Install it (%s -m ensurepip --upgrade, or your "
             "distribution's python3-pip package) and run the script again" % (sys.executable, sys.executable))
    marker = externally_managed()
    if marker and os.environ.get("PIP_BREAK_SYSTEM_PACKAGES", "").lower() not in ("1", "true", "yes", "on"):
        fail("externally_managed", "%s is a system Python that refuses pip installs (PEP 668: %s). Use a virtual "
             "environment that sees your framework:\n  %s -m venv --system-site-packages ~/perseus-env\n"
             "  bash install_AIACC-Training.sh ~/perseus-env/bin/python\nor allow a per-user install: "
             "PIP_BREAK_SYSTEM_PACKAGES=1 with pip install --user" % (sys.executable, marker, sys.executable))
