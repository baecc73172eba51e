"""perseus-common's version is the release it is built for: PERSEUS_RELEASE at build time.

`aiacc-build wheel common --release R` (the local build and the CI workflow) sets it; a plain
`pip install native/runtime` without it builds DEFAULT_RELEASE, the default of the bindings' builds
too (native/bindings/*/pyproject.toml `default-release`), so a development checkout stays consistent.
The version is written into the built package as perseus/_version.py (never into the source tree).
"""

import os
import re

from setuptools import setup
from setuptools.command.build_py import build_py

DEFAULT_RELEASE = "1.5.0"


def release_version() -> str:
    version = os.environ.get("PERSEUS_RELEASE", "").strip() or DEFAULT_RELEASE
    if not re.match(r"^[0-9]+(\.[0-9]+)*$", version):
        raise SystemExit("PERSEUS_RELEASE=%r is not a release version such as 2.0.0" % version)
    return version


class BuildPyWithVersion(build_py):
    def run(self) -> None:
        super().run()
        target = os.path.join(self.build_lib, "perseus", "_version.py")
        with open(target, "w") as fh:
            fh.write('# written by native/runtime/setup.py at build time\n__version__ = "%s"\n' % release_version())


setup(version=release_version(), cmdclass={"build_py": BuildPyWithVersion})
