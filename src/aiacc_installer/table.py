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


def load_table():
    cells = []
    for line in os.environ["AIACC_CELL_TABLE"].splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            cells.append(Cell(line))
    return cells
