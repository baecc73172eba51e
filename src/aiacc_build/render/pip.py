"""pip arguments that install a cell's exact framework build; shared by every rendered file."""

from __future__ import annotations

from ..model import FrameworkBuild


def index_args(build: FrameworkBuild) -> tuple[str, ...]:
    """Where pip finds the exact build: a find-links page (`.../torch_stable.html`) or an extra index."""
    if build.index_url is None:
        return ()
    option = "--find-links" if build.index_url.endswith(".html") else "--extra-index-url"
    return (option, build.index_url)


def framework_install_args(build: FrameworkBuild) -> tuple[str, ...]:
    """`torch==1.7.1+cu110 --find-links https://...`: the requirement, then where it comes from."""
    return (build.requirement, *index_args(build))
