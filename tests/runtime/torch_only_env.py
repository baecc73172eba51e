"""A fresh venv holding torch, what torch requires, and the installed perseus binding: nothing else (no numpy).

The packages are links into the test venv's site-packages, so building it takes a second, not a download."""

import re
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path
from typing import List, Set

from packaging.requirements import Requirement

SITE = Path(sysconfig.get_paths()["purelib"])


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def torch_closure() -> List[metadata.Distribution]:
    """torch and its required distributions (markers evaluated here, extras left out)."""
    found: List[metadata.Distribution] = []
    seen: Set[str] = set()
    todo = ["torch"]
    while todo:
        name = todo.pop()
        if _canonical(name) in seen:
            continue
        seen.add(_canonical(name))
        dist = metadata.distribution(name)
        found.append(dist)
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def _top_level(dist: metadata.Distribution) -> Set[str]:
    names = set()
    for file in dist.files or []:
        first = file.parts[0]
        if first != ".." and first != "__pycache__" and not first.endswith(".pth"):
            names.add(first)
    return names


def build(dest: Path) -> Path:
    """Create the venv in `dest`; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = dest / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    names = set().union(*(_top_level(d) for d in torch_closure())) | {"perseus"}  # perseus: the compiled binding
    for name in sorted(names):
        if (SITE / name).exists():
            (site / name).symlink_to(SITE / name)
    return python
