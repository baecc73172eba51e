"""How a plan and a build report look: a rich table for people, plain dicts for --json."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ..naming import wheel_path
from .plan import BuildPlan, CellStatus, human_size


def plan_summary(plan: BuildPlan) -> dict[str, int]:
    return {
        "cells": len(plan.cells),
        "build": len(plan.to_build),
        "deferred": len(plan.deferred),
        "buildable_here": sum(p.buildable_here for p in plan.cells),
    }


def plan_json(plan: BuildPlan) -> dict[str, Any]:
    return {
        "release": plan.release,
        "summary": plan_summary(plan),
        "cells": [
            {
                "key": p.cell.key,
                "path": wheel_path(p.cell),
                "status": p.status.value,
                "reason": p.reason,
                "buildable_here": p.buildable_here,
                "build_python": p.build_python,
                "framework_requirement": p.cell.build.requirement,
                "framework_file": p.framework.filename if p.framework else None,
                "download_size": p.download_size,
                "framework_cuda": p.facts.cuda if p.facts else None,
                "framework_cxx11_abi": p.facts.cxx11_abi if p.facts else None,
            }
            for p in plan.cells
        ],
    }


def print_plan_summary(plan: BuildPlan, console: Console) -> None:
    """Counts per status and one line per cell to build; the full table is `print_plan` (--verbose)."""
    s = plan_summary(plan)
    more = s["buildable_here"] - s["build"]
    known = sum(p.download_size or 0 for p in plan.deferred if p.buildable_here)
    console.print(
        f"release {plan.release}: {s['cells']} cells: {s['build']} to build here, {s['deferred']} deferred "
        f"({more} of them buildable here with --cells, {human_size(known)} of frameworks to download; "
        f"{s['deferred'] - more} need CI)",
        soft_wrap=True,
    )
    for p in plan.to_build:
        console.print(f"  [green]build[/] {p.cell.key.split('/', 1)[1]}: {p.reason}", soft_wrap=True)
    console.print("  every cell with its reason: --verbose (and the build record)", soft_wrap=True)


def print_plan(plan: BuildPlan, console: Console) -> None:
    table = Table(title=f"release {plan.release}: build plan", show_lines=False)
    table.add_column("cell", overflow="fold")
    table.add_column("status")
    table.add_column("reason", overflow="fold")
    for p in plan.cells:
        style = "green" if p.status is CellStatus.BUILD else ("yellow" if p.buildable_here else "dim")
        table.add_row(p.cell.key.split("/", 1)[1], f"[{style}]{p.status.value}[/]", p.reason)
    console.print(table)
    s = plan_summary(plan)
    downloads = [p.download_size for p in plan.cells if p.buildable_here and p.status is CellStatus.DEFERRED]
    extra = ""
    if downloads:
        known = sum(d for d in downloads if d)
        more = s["buildable_here"] - s["build"]
        extra = f" ({more} more buildable here with --cells, {human_size(known)} of frameworks to download)"
    console.print(f"{s['build']} to build, {s['deferred']} deferred to CI{extra}")
