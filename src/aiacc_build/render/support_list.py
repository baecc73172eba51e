"""SUPPORT.md and support.json: every cell of a release, its artifacts, and where it stands, read from
the build record (dist/<release>.record.json) alone.

A cell is "built" only when the record holds its wheel (file and sha256); a cell the record defers
keeps the record's reason; with no record every cell is "not built yet". Frameworks without a binding
say so (the planner's own check), whether or not a record exists.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from .. import naming
from ..adapters import adapter_for
from ..wheels.plan import binding_problem
from ..wheels.record import BuildRecord, CellRecord
from ..caffe.package import expected as caffe_expected
from ..mxnet_patch import patch_path as mxnet_patch_path
from ..model import Cell, ReleaseInfo, group_cells
from .docker import unpublished_base
from .output import RenderedFile
from .templates import render

STATUS_BUILT = "built"
STATUS_DEFERRED = "deferred"
STATUS_NOT_BUILT = "not built yet"
STATUSES = (STATUS_BUILT, STATUS_DEFERRED, STATUS_NOT_BUILT)


@dataclass(frozen=True)
class CellStanding:
    status: str  # one of STATUSES
    reason: str


def cell_standing(cell: Cell, record: BuildRecord | None) -> CellStanding:
    recorded: CellRecord | None = None
    if record is not None:
        recorded = next((c for c in record.cells if c.key == cell.key), None)
    if recorded is not None and recorded.status == "built" and recorded.sha256:
        return CellStanding(STATUS_BUILT, recorded.tested or recorded.reason)
    no_binding = binding_problem(cell.framework)
    if recorded is not None:
        return CellStanding(STATUS_DEFERRED, recorded.reason)
    if no_binding is not None:
        return CellStanding(STATUS_NOT_BUILT, no_binding)
    if record is None:
        return CellStanding(STATUS_NOT_BUILT, "no build record of this release yet")
    return CellStanding(STATUS_NOT_BUILT, "not in the build record (the matrix changed since the build)")


def cell_entry(cell: Cell, record: BuildRecord | None, ci_job: str, base_images: dict[str, str]) -> dict:
    standing = cell_standing(cell, record)
    # a built wheel's path is the record's (its proven platform tag); the others get the release's name
    built = next((c for c in record.cells if c.key == cell.key and c.status == "built"), None) if record else None
    wheel = built.path if built else naming.wheel_path(cell)
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
        "wheel": wheel,
        "wheel_url": f"{cell.release.mirror_url.rstrip('/')}/{naming.url_path(wheel)}",
        "conda_files": [naming.conda_filename(cell, p) for p in cell.env_pythons],
        "docker_images": [
            naming.docker_image_ref(cell, os_type, p, registry=cell.release.docker_registry)
            for os_type in cell.release.docker_os_types
            if unpublished_base(cell, os_type) is None
            for p in cell.env_pythons
        ],
        "base_images": base_images,
        # the CI workflow's rule: a framework whose adapter declares no binding gets no job
        "ci_job": ci_job if adapter_for(cell.framework).binding_missing is None else None,
        "status": standing.status,
        "reason": standing.reason,
    }


def support_entries(
    cells: tuple[Cell, ...] | list[Cell], record: BuildRecord | None, base_images: dict[str, dict[str, str]] | None = None
) -> list[dict]:
    """`base_images`: cell key -> {base image reference: its upstream status} (from docker.base_image_status)."""
    job_of = {}
    for group in group_cells(cells):
        for cell in group.cells:
            job_of[cell.key] = naming.ci_job_id(group)
    return [cell_entry(c, record, job_of[c.key], (base_images or {}).get(c.key, {})) for c in cells]


def render_support(
    release: ReleaseInfo,
    cells: tuple[Cell, ...] | list[Cell],
    record: BuildRecord | None,
    base_images: dict[str, dict[str, str]] | None = None,
) -> list[RenderedFile]:
    if record is not None and record.release != release.version:
        raise ValueError(f"the build record is of release {record.release}, not {release.version}")
    entries = support_entries(cells, record, base_images)
    arches = tuple(sorted({c.arch.value for c in cells}))
    caffe = [{"path": a.path, "kind": a.kind, "platform": a.platform} for a in caffe_expected(release, arches)]
    patch = release.mxnet_patch
    mxnet_patches = [] if patch is None else [{"path": mxnet_patch_path(patch.patch), "upstream": f"apache/mxnet {patch.upstream_version}",
                                               "upstream_commit": patch.upstream_commit}]
    counts = Counter(e["status"] for e in entries)
    document = {
        "release": release.version,
        "mirror_url": release.mirror_url,
        "cibuildwheel": release.cibuildwheel,
        "build_record": None if record is None else {"tool_version": record.tool_version, "cells": len(record.cells)},
        "counts": {s: counts.get(s, 0) for s in STATUSES},
        "cells": entries,
        "caffe": caffe,
        "mxnet_patches": mxnet_patches,
    }
    markdown = render(
        "SUPPORT.md.j2",
        release=release,
        entries=entries,
        caffe=caffe,
        caffe_info=release.caffe,
        mxnet_patches=mxnet_patches,
        counts=document["counts"],
        has_record=record is not None,
        install_script=naming.INSTALL_SCRIPT_NAME,
    )
    return [
        RenderedFile(path="SUPPORT.md", content=markdown, kind="support"),
        RenderedFile(path="support.json", content=json.dumps(document, indent=2) + "\n", kind="support"),
    ]
