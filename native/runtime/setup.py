"""perseus-common's version is the release it is built for: PERSEUS_RELEASE at build time.

`aiacc-build wheel common --release R` (the local build and the CI workflow) sets it; a plain
`pip install native/runtime` without it builds native/release/DEFAULT_RELEASE (the matrix's newest release), the
default of the bindings' builds too, so a development checkout stays consistent.
The version is written into the built package as perseus/_version.py (never into the source tree).
"""

import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def release_version() -> str:
    """PERSEUS_RELEASE, else native/release/DEFAULT_RELEASE: the rule of native/release/perseus_release.py."""
    rule = os.path.join(HERE, "..", "release", "perseus_release.py")
    spec = importlib.util.spec_from_file_location("perseus_release", rule)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        return module.release()
    except RuntimeError as exc:
        raise SystemExit(str(exc))


class BuildPyWithVersion(build_py):
    def run(self) -> None:
        super().run()
        target = os.path.join(self.build_lib, "perseus", "_version.py")
        with open(target, "w") as fh:
            fh.write('# written by native/runtime/setup.py at build time\n__version__ = "%s"\n' % release_version())


setup(version=release_version(), cmdclass={"build_py": BuildPyWithVersion})
