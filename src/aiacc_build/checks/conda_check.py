"""`check conda` over rendered release folders: every environment file, against the table and its cells."""

from __future__ import annotations

import time
from pathlib import Path

from .. import naming
from ..model import Cell
from ..render.variants import arch_variants
from .conda_env import parse_env_file
from .conda_rules import Expected, check_env
from ..conda_table import CondaTable
from .findings import CheckReport, Finding


def expected_files(cells: tuple[Cell, ...] | list[Cell]) -> dict[str, Expected]:
    """File name -> the cells (arch variants) and Python it is for, as the renderer names them."""
    out: dict[str, Expected] = {}
    for variants in arch_variants(cells):
        for python in variants[0].env_pythons:
            out[naming.conda_filename(variants[0], python)] = Expected(variants, python)
    return out


def check_release_conda(release_dir: Path, cells: tuple[Cell, ...] | list[Cell], table: CondaTable, report: CheckReport) -> None:
    """Check every file of `release_dir/<conda_dir>/` and that exactly the expected files are there."""
    if not cells:
        return
    release = cells[0].release
    folder = release_dir / release.conda_dir
    prefix = f"{release.version}/{release.conda_dir}"
    expected = expected_files(cells)
    present = sorted(p.name for p in folder.glob("*.yaml")) if folder.is_dir() else []
    for name in sorted(set(expected) - set(present)):
        report.findings.append(Finding(f"{prefix}/{name}", "missing-file", name, f"cell {expected[name].cell.key} (Python {expected[name].python}) has no environment file: run `aiacc-build render`"))
    for name in present:
        rel = f"{prefix}/{name}"
        report.count("files")
        env, problems = parse_env_file(rel, (folder / name).read_text(encoding="utf-8"))
        report.findings.extend(problems)
        if env is None:
            continue
        want = expected.get(name)
        if want is None:
            report.findings.append(Finding(rel, "unexpected-file", name, "no cell of the release has this environment file (left over from an earlier matrix?)"))
        report.count("specs", len(env.specs))
        report.count("pip lines", len(env.pip))
        report.findings.extend(check_env(env, table, want))


def check_conda(releases: list, dist: Path, table: CondaTable) -> CheckReport:
    """`releases`: loaded matrix releases (.info, .cells); `dist`: the folder holding <release>/."""
    start = time.perf_counter()
    report = CheckReport("conda")
    report.notes.append(f"channel table: {table.path} ({sum(len(c.packages) for c in table.channels.values())} packages on {len(table.channels)} channels)")
    report.notes.append("strict channel priority assumed: a package comes from the first listed channel that has it")
    for release in releases:
        report.count("releases")
        check_release_conda(dist / release.info.version, release.cells, table, report)
    report.seconds = time.perf_counter() - start
    return report
