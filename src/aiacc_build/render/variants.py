"""Cells that differ only in architecture share one conda file and one (multi-platform) image tag.

Names of conda files and Docker tags carry no architecture, so the x86_64 and aarch64 cells of one
(framework, version, CUDA, Python) are rendered together: one file, one tag, several platforms.
"""

from __future__ import annotations

from ..model import Cell


def arch_variants(cells: tuple[Cell, ...] | list[Cell]) -> list[tuple[Cell, ...]]:
    """Group cells by everything but the architecture, keeping first-seen order."""
    groups: dict[tuple, list[Cell]] = {}
    for cell in cells:
        key = (cell.release_version, cell.framework, cell.framework_version, cell.cuda, cell.python)
        groups.setdefault(key, []).append(cell)
    result = []
    for members in groups.values():
        first = members[0]
        for other in members[1:]:
            # The framework build may differ per architecture (tensorflow-cpu has no aarch64 wheels):
            # the conda file then selects it with a platform marker. The Pythons may not differ.
            if other.env_pythons != first.env_pythons:
                raise ValueError(
                    f"cells {first.key} and {other.key} differ in their environment Pythons "
                    f"({', '.join(first.env_pythons)} vs {', '.join(other.env_pythons)}): "
                    "their shared conda files and image tags would be ambiguous"
                )
        result.append(tuple(members))
    return result
