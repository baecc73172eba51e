"""`--cells` selectors: which cells a build widens to beyond the default (frameworks on this disk).

A selector is one of
  - `all`: every cell of the release,
  - a glob on the cell key, with or without the release: `torch-2.13.0/cpu/py3.1*/x86_64`,
    `2.0.0/torch-2.14.1/cuda13.0/*`,
  - filters `field=value[,field=value...]` over framework, version, cuda, python, arch, with the
    matrix's spellings: `framework=torch,cuda=cu130,python=3.12`.
Several selectors add up. A selector that matches no cell is an error naming the nearest keys.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Sequence

from .. import hints
from ..errors import ConfigurationError, UnsupportedCellError
from ..matrix import select_cells
from ..model import Cell

FILTER_FIELDS = {
    "framework": "framework",
    "version": "framework_version",
    "cuda": "cuda",
    "python": "python",
    "arch": "arch",
}


def _short_key(cell: Cell) -> str:
    return cell.key.split("/", 1)[1]


def _match_filters(selector: str, cells: Sequence[Cell]) -> list[Cell]:
    filters: dict[str, str] = {}
    for part in selector.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in FILTER_FIELDS or not value.strip():
            raise ConfigurationError(
                f"bad selector {selector!r}: write field=value with fields {', '.join(FILTER_FIELDS)}, "
                "or a cell key glob such as torch-2.13.0/cpu/py3.11/x86_64"
            )
        filters[FILTER_FIELDS[name]] = value.strip()
    try:
        return select_cells(cells, **filters)
    except ValueError as exc:
        raise ConfigurationError(f"bad selector {selector!r}: {exc}") from None


def select(cells: Sequence[Cell], selectors: Iterable[str]) -> set[str]:
    """The keys of the cells the selectors name."""
    chosen: set[str] = set()
    for selector in selectors:
        selector = selector.strip()
        if selector == "all":
            hits = list(cells)
        elif "=" in selector:
            hits = _match_filters(selector, cells)
        else:
            hits = [
                c for c in cells if fnmatch.fnmatchcase(c.key, selector) or fnmatch.fnmatchcase(_short_key(c), selector)
            ]
        if not hits:
            near = difflib.get_close_matches(
                selector, [c.key for c in cells] + [_short_key(c) for c in cells], n=4, cutoff=0.5
            )
            hint = (
                f"; nearest: {', '.join(near)}"
                if near
                else f"; `{hints.matrix_list(cells[0].release_version)}` lists the cells"
            )
            raise UnsupportedCellError(f"selector {selector!r} matches no cell of the release{hint}")
        chosen.update(c.key for c in hits)
    return chosen
