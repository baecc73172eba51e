"""Everything rendered from the matrix: conda files, Dockerfiles + bake file, the CI workflow,
install_AIACC-Training.sh and the support list. Names come from aiacc_build.naming only."""

from .release import KINDS, ReleaseResult, render_release, render_release_to
from .support import BuildHost, BuildLocation, build_location

__all__ = ["KINDS", "BuildHost", "BuildLocation", "ReleaseResult", "build_location", "render_release", "render_release_to"]
