"""The user's environment: the perseus distributions installed in it, their backup, pip, and what a
wheel needs that is not installed. pip installs only verified local files (no index, no dependencies)."""
import csv
import os
import re
import shutil
import subprocess
import sys

from .common import normalise, numbers
from .detect import installed_distributions, metadata_folders
from .table import FRAMEWORKS

PERSEUS_DISTRIBUTIONS = ("perseus-common",) + tuple(normalise(row["binding_distribution"]) for row in FRAMEWORKS)


def installed_perseus():
    """{normalised name: (name, version, dist-info folder)} of the perseus distributions this Python sees."""
    found = {}
    for name, version, folder in metadata_folders():
        key = normalise(name)
        if key in PERSEUS_DISTRIBUTIONS and folder.endswith(".dist-info") and key not in found:
            # named as its wheel (and pip's messages) spell it: the dist-info folder's name
            found[key] = (os.path.basename(folder).split("-")[0], version, folder)
    return found


class Backup(object):
    """A copy of every file an installed distribution's RECORD lists, to put back after a failed change."""

    def __init__(self, folder):
        self.folder = folder
        self.files = []  # (original path, copy)

    def add(self, dist_info):
        site = os.path.dirname(dist_info)
        with open(os.path.join(dist_info, "RECORD"), newline="") as handle:
            for row in csv.reader(handle):
                if not row:
                    continue
                original = os.path.normpath(os.path.join(site, row[0]))
                if not os.path.isfile(original):
                    continue
                copy = os.path.join(self.folder, str(len(self.files)))
                shutil.copy2(original, copy)
                self.files.append((original, copy))

    def restore(self):
        for original, copy in self.files:
            parent = os.path.dirname(original)
            if not os.path.isdir(parent):
                os.makedirs(parent)
            shutil.copy2(copy, original)


def pip(*args):
    """Run this Python's pip quietly; (exit code, output)."""
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.Popen([sys.executable, "-m", "pip"] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, env=env)
    out, _ = proc.communicate()
    return proc.returncode, out


def pip_install_verified(files, folder):
    """pip installs exactly these downloaded files, checking their sha256 itself: no index, no
    dependencies. Pinned by name and version from the download folder, so `pip freeze` shows
    `name==version` rather than a temporary file URL."""
    requirements = os.path.join(folder, "requirements.txt")
    with open(requirements, "w") as handle:
        for path, sha256 in files:
            handle.write("%s==%s --hash=sha256:%s\n" % (wheel_project(path), wheel_version(path), sha256))
    return pip("install", "--no-index", "--find-links", os.path.dirname(files[0][0]), "--no-deps",
               "--require-hashes", "--no-cache-dir", "-r", requirements)


def wheel_version(path):
    """perseus_torch-2.0.0+2.13.0-cp311-... -> 2.0.0+2.13.0 (wheel file names escape nothing else here)."""
    return os.path.basename(path).split("-")[1]


def wheel_project(path):
    return normalise(os.path.basename(path).split("-")[0])


def missing_requirements(wheel_file):
    """Requires-Dist of a perseus wheel that are not installed (only python_version markers are evaluated)."""
    import zipfile
    with zipfile.ZipFile(wheel_file) as archive:
        name = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")][0]
        metadata = archive.read(name).decode("utf-8")
    installed = installed_distributions()
    missing = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement, _, marker = line.split(":", 1)[1].partition(";")
        project = normalise(re.split(r"[\s<>=!~\[(]", requirement.strip(), 1)[0])
        if project in PERSEUS_DISTRIBUTIONS or not marker_applies(marker):
            continue
        if project not in installed:
            missing.append(requirement.strip())
    return missing


def marker_applies(marker):
    marker = marker.strip()
    if not marker:
        return True
    match = re.match(r"""^python_version\s*(<=|>=|<|>|==|!=)\s*['"]([0-9.]+)['"]$""", marker)
    if not match:
        return True  # a marker this script cannot evaluate: require the dependency, and say so if missing
    mine, theirs = tuple(sys.version_info[:2]), numbers(match.group(2))
    return {"<": mine < theirs, "<=": mine <= theirs, ">": mine > theirs, ">=": mine >= theirs,
            "==": mine == theirs, "!=": mine != theirs}[match.group(1)]
