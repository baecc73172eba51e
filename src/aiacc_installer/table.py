"""What the rendered script embeds and hands over in the environment: the release's cell table and the
build tool's framework rows.

AIACC_CELL_TABLE: one line per cell, `framework version cuda|cpu python|any arch folder/file`.
AIACC_FRAMEWORKS: JSON, one row per framework adapter of the build tool (its distributions, how to find
the CUDA it was built with, its binding's distribution and self-test).
"""
import json
import os

FRAMEWORKS = json.loads(os.environ.get("AIACC_FRAMEWORKS") or "[]")
FRAMEWORK_NAMES = tuple(row["name"] for row in FRAMEWORKS)


def framework_row(name):
    return next(row for row in FRAMEWORKS if row["name"] == name)


class Cell(object):
    def __init__(self, line):
        fields = line.split()
        if len(fields) != 6:
            raise ValueError("bad cell table line: " + line)
        self.framework, self.version, self.accel, self.python, self.arch, self.path = fields

    def describe(self):
        accel = "CPU" if self.accel == "cpu" else "CUDA " + self.accel
        python = "any Python 3" if self.python == "any" else "Python " + self.python
        return "%s %s, %s, %s, %s" % (self.framework, self.version, accel, python, self.arch)


# script path -> the mirror's path of the same wheel under the platform tag its build proved (a wheel built
# outside the release's manylinux image: manylinux_2_36 instead of manylinux_2_28); set from manifest.json
MIRROR_PATHS = {}


def same_wheel_other_platform(mine, theirs):
    """True when two wheel paths differ only in the platform tag, for the same arch (the last `_<arch>`)."""
    if not (mine.endswith(".whl") and theirs.endswith(".whl")):
        return False
    mine_head, mine_platform = mine[:-4].rsplit("-", 1)
    their_head, their_platform = theirs[:-4].rsplit("-", 1)
    arch = lambda platform: platform.split(".")[0].split("_", 3)[-1] if platform.startswith("manylinux_") else platform.split("_", 1)[-1]
    return mine_head == their_head and arch(mine_platform) == arch(their_platform)


def load_table():
    cells = []
    for line in os.environ["AIACC_CELL_TABLE"].splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            cell = Cell(line)
            cell.path = MIRROR_PATHS.get(cell.path, cell.path)
            cells.append(cell)
    return cells
