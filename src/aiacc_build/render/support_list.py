"""SUPPORT.md and support.json: every cell of a release, its artifacts, its status and the reason."""

from __future__ import annotations

import json

from .. import naming
from ..model import Cell, ReleaseInfo, group_cells
from .output import RenderedFile
from .support import BuildHost, build_location
from .templates import render

STATUS_LISTED = "listed"  # in the matrix; every artifact rendered. Later issues add "built", "published".
STATUS_NO_BINDING = "not built"  # its framework has no binding yet: no wheel, no CI job


def cell_entry(cell: Cell, host: BuildHost, ci_job: str) -> dict:
    location = build_location(cell, host)
    built = location.where != "none"
    return {
        "key": cell.key,
        "framework": cell.framework.value,
        "framework_version": cell.framework_version,
        "cuda": cell.cuda,
        "python": cell.python,
        "arch": cell.arch.value,
        "env_pythons": list(cell.env_pythons),
        "framework_requirement": cell.build.requirement,
        "framework_index_url": cell.build.index_url,
        "wheel": naming.wheel_path(cell),
        "wheel_url": naming.wheel_url(cell),
        "conda_files": [naming.conda_filename(cell, p) for p in cell.env_pythons],
        "docker_images": [
            naming.docker_image_ref(cell, os_type, p, registry=cell.release.docker_registry)
            for os_type in cell.release.docker_os_types
            for p in cell.env_pythons
        ],
        "ci_job": ci_job if built else None,
        "status": STATUS_LISTED if built else STATUS_NO_BINDING,
        "build": location.where,
        "reason": location.reason,
    }


def support_entries(cells: tuple[Cell, ...] | list[Cell], host: BuildHost) -> list[dict]:
    job_of = {}
    for group in group_cells(cells):
        for cell in group.cells:
            job_of[cell.key] = naming.ci_job_id(group)
    return [cell_entry(c, host, job_of[c.key]) for c in cells]


def render_support(release: ReleaseInfo, cells: tuple[Cell, ...] | list[Cell], host: BuildHost) -> list[RenderedFile]:
    entries = support_entries(cells, host)
    document = {
        "release": release.version,
        "mirror_url": release.mirror_url,
        "cibuildwheel": release.cibuildwheel,
        "build_host": {"arch": host.arch, "pythons": sorted(host.pythons, key=lambda v: tuple(map(int, v.split(".")))), "cuda_toolkits": list(host.cuda_toolkits)},
        "cells": entries,
    }
    here = sum(1 for e in entries if e["build"] == "here")
    ci = sum(1 for e in entries if e["build"] == "ci")
    markdown = render(
        "SUPPORT.md.j2", release=release, entries=entries, here=here, ci=ci, not_built=len(entries) - here - ci,
        install_script=naming.INSTALL_SCRIPT_NAME,
    )
    return [
        RenderedFile(path="SUPPORT.md", content=markdown, kind="support"),
        RenderedFile(path="support.json", content=json.dumps(document, indent=2) + "\n", kind="support"),
    ]
