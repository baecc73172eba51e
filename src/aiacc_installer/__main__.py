"""install_AIACC-Training.sh's program: the shell part checks the arguments and the Python, then runs
this (the package, flattened into one module at render time) under the user's Python 3.6+, standard
library only. Inputs from the environment the script sets: AIACC_RELEASE, AIACC_MIRROR_URL,
AIACC_COMMON_WHEEL, AIACC_FRAMEWORK (empty: every installed one), AIACC_DRY_RUN, AIACC_OFFLINE,
AIACC_UNINSTALL ("1" or ""), AIACC_CA_BUNDLE (a PEM file, or empty), and the tables of table.py."""
import os
import sys

from .apply import install, uninstall
from .common import say
from .decide import detect_and_decide
from .manifest import check_published, published_paths, read_manifest
from .mirror import Mirror
from .prerequisites import check_pip, check_prerequisites


def main():
    release = os.environ["AIACC_RELEASE"]
    wanted = os.environ.get("AIACC_FRAMEWORK", "")
    if os.environ.get("AIACC_UNINSTALL") == "1":
        say("AIACC-Training %s uninstaller (%s)" % (release, sys.executable))
        check_pip()
        uninstall([wanted] if wanted else [])
        return
    mirror = Mirror(os.environ["AIACC_MIRROR_URL"], os.environ.get("AIACC_CA_BUNDLE", ""))
    offline = os.environ.get("AIACC_OFFLINE") == "1"
    records = None if offline else read_manifest(mirror, release)
    chosen = detect_and_decide(None if records is None else published_paths(records))
    for path in [os.environ["AIACC_COMMON_WHEEL"]] + [cell.path for _, cell, _ in chosen]:
        say("wheel:      %s" % mirror.where(path))
    if records is not None:
        check_published(chosen, records)
    check_pip()
    check_prerequisites()
    if os.environ.get("AIACC_DRY_RUN") == "1":
        say("dry run: nothing was installed" + (" (offline: the mirror was not read)" if offline else ""))
        return
    install(chosen, mirror, release, records)


if __name__ == "__main__":
    main()
