"""The release matrix: data files -> validated, derived cells.

    from aiacc_build.matrix import load_release, load_all, select_cells
"""

from .loader import Release, default_release, load_all, load_release, select_cells

__all__ = ["Release", "default_release", "load_all", "load_release", "select_cells"]
