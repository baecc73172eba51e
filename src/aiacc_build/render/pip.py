"""pip arguments that install a cell's exact framework build; shared by every rendered file."""

from __future__ import annotations

import re

from ..model import FrameworkBuild


def index_args(build: FrameworkBuild) -> tuple[str, ...]:
    """Where pip finds the exact build: a find-links page (`.../torch_stable.html`) or an extra index."""
    if build.index_url is None:
        return ()
    option = "--find-links" if build.index_url.endswith(".html") else "--extra-index-url"
    return (option, build.index_url)


def framework_install_args(build: FrameworkBuild) -> tuple[str, ...]:
    """`torch==1.7.1+cu110 --find-links https://...`: the requirement, what its adapter installs next to
    it (`mxnet==1.9.1 numpy<1.24`), then where it comes from."""
    from ..adapters import companion_requirements

    project = re.split(r"[=<>!~;\[ ]", build.requirement, maxsplit=1)[0]
    return (build.requirement, *companion_requirements(project), *index_args(build))
