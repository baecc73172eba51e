"""The release a build of perseus-common or a binding is for, and a binding wheel's version, made once for every
build under native/ (the bindings' metadata providers and native/runtime/setup.py load this file by path).

The release is PERSEUS_RELEASE when set (the build tool and CI always set it), else native/release/DEFAULT_RELEASE: the
matrix's newest release, kept equal to it by tests/test_default_release.py. A binding wheel's version is
`<release>+<framework public version>` (2.0.0+2.13.0). Python >= 3.6, standard library only.
"""
import os
import re

DEFAULT_RELEASE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "DEFAULT_RELEASE")
_RELEASE = re.compile(r"^[0-9]+(\.[0-9]+)*$")


def default_release():
    try:
        with open(DEFAULT_RELEASE_FILE) as handle:
            found = handle.read().strip()
    except OSError:
        raise RuntimeError("PERSEUS_RELEASE is not set and %s is missing (a source tree without native/): set "
                           "PERSEUS_RELEASE to the release to build, e.g. 2.0.0" % DEFAULT_RELEASE_FILE)
    return _checked(found, DEFAULT_RELEASE_FILE)


def release():
    """PERSEUS_RELEASE, else the default release."""
    given = os.environ.get("PERSEUS_RELEASE", "").strip()
    return _checked(given, "PERSEUS_RELEASE") if given else default_release()


def wheel_version(release_version, framework_public_version):
    """A binding wheel's version: `<release>+<framework public version>`."""
    return "%s+%s" % (release_version, framework_public_version)


def _checked(version, source):
    if not _RELEASE.match(version):
        raise RuntimeError("%s=%r is not a release version such as 2.0.0" % (source, version))
    return version
