"""Every name naming.py computes for a cell, gathered into one JSON-ready record."""

from __future__ import annotations

from typing import Any

from .. import naming
from ..model import Cell, group_cells


def cell_record(cell: Cell, release_cells: tuple[Cell, ...] | list[Cell]) -> dict[str, Any]:
    """A cell with all its published names (wheel, folder, URL, conda, Docker, CI, cibuildwheel)."""
    info = cell.release
    group = next(g for g in group_cells(list(release_cells)) if cell in g.cells)
    return {
        "key": cell.key,
        "release": cell.release_version,
        "framework": cell.framework.value,
        "framework_version": cell.framework_version,
        "cuda": cell.cuda,
        "python": cell.python,
        "arch": cell.arch.value,
        "env_pythons": list(cell.env_pythons),
        "build": {
            "requirement": cell.build.requirement,
            "index_url": cell.build.index_url,
            "cuda_variant": cell.build.cuda_variant,
            "cxx11_abi": cell.build.cxx11_abi,
        },
        "wheel": {
            "filename": naming.wheel_filename(cell),
            "folder": naming.accelerator_folder(cell),
            "path": naming.wheel_path(cell),
            "url": naming.wheel_url(cell),
            "repaired_filename": naming.repaired_wheel_filename(cell),
            "common_filename": naming.common_wheel_filename(info),
        },
        "conda": [
            {"python": py, "filename": naming.conda_filename(cell, py), "url": naming.conda_url(cell, py)}
            for py in cell.env_pythons
        ],
        "docker": [
            {
                "os_type": os_type,
                "python": py,
                "tag": naming.docker_tag(cell, os_type, py),
                "image": naming.docker_image_ref(cell, os_type, py),
                "ref": naming.docker_image_ref(cell, os_type, py, info.docker_registry),
                "local": os_type == info.local_os_type,
            }
            for os_type in (*info.docker_os_types, info.local_os_type)
            for py in cell.env_pythons
        ],
        "ci": {
            "job_id": naming.ci_job_id(group),
            "cibw_identifier": naming.cibw_identifier(cell),
            "cibw_build": naming.cibw_build_selector(group),
            "cibuildwheel": info.cibuildwheel,
            "builder_image": naming.builder_image_tag(info, cell.cuda, cell.arch.value),
        },
    }
