"""The pyenv prefix of a Python minor version (e.g. ~/.pyenv/versions/3.11.7): what the conda stand-in channels
repackage as `python` (src/aiacc_build/checks/conda_channel.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiacc_build.wheels.toolchain import find_interpreter


def pyenv_prefix(python: str) -> Path:
    found = find_interpreter(python)
    if found is None:
        pytest.fail(f"no pyenv Python {python} here to repackage as conda's python (dev/lib.sh find_python)")
    return Path(found.executable).parent.parent
