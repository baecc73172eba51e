"""The committed table of upstream base images, and the render-time check against it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from aiacc_build import naming
from aiacc_build.base_images import BaseImageError, check, load_table, resolve_cuda_image, shipped_table
from aiacc_build.matrix import load_all
from aiacc_build.render import render_release
from aiacc_build.render.docker import BAKE_FILE, base_references

from render.sample_releases import FIXED_HOST, MODERN, SEED, modern_cells, seed_cells


def _files(release, cells) -> dict[str, str]:
    return {f.path: f.content for f in render_release(release, cells, FIXED_HOST)}


def test_every_base_image_of_the_shipped_releases_is_a_recorded_tag():
    table = shipped_table()
    for loaded in load_all():
        bake = json.loads(_files(loaded.info, loaded.cells)[BAKE_FILE])
        for name, target in bake["target"].items():
            for ref in base_references(target["args"]):
                status = check(table, ref)
                assert status.label in ("made locally", "available") or status.withdrawn, (name, ref)


def test_nvidia_tags_carry_the_patch_and_the_cudnn_major():
    assert naming.cuda_base_image("11.0", "centos7") == "nvidia/cuda:11.0.3-cudnn8-devel-centos7"
    assert naming.cuda_base_image("11.8", "ubuntu2204") == "nvidia/cuda:11.8.0-cudnn8-devel-ubuntu22.04"
    assert naming.cuda_base_image("12.4", "ubuntu2204") == "nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04"
    assert naming.builder_cuda_image(MODERN, "13.0") == "nvidia/cuda:13.0.1-devel-rockylinux8"


def test_no_cuda_11_image_for_ubuntu_24_04_is_rendered():
    release = dataclasses.replace(MODERN, docker_os_types=("ubuntu2204", "ubuntu2404"))
    cells = tuple(dataclasses.replace(c, release=release) for c in modern_cells())
    cu124 = next(c for c in cells if c.cuda == "12.4")
    files = _files(release, cells)
    bake = json.loads(files[BAKE_FILE])
    refs = {ref for t in bake["target"].values() for ref in base_references(t["args"])}
    assert not [r for r in refs if r.startswith("nvidia/cuda:12.4") and "ubuntu24.04" in r]
    assert "nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04" in refs
    entry = next(e for e in json.loads(files["support.json"])["cells"] if e["key"] == cu124.key)
    assert entry["base_images"]["nvidia/cuda:12.4-cudnn-devel-ubuntu24.04"].startswith(
        "not published upstream, no image: NVIDIA publishes Ubuntu 24.04 images from CUDA 12.5 on"
    )


def test_a_tag_that_never_existed_fails_with_the_nearest_real_ones():
    release = dataclasses.replace(SEED, docker_os_types=("ubuntu2004",))  # no 11.0 / 10.x image recorded for 20.04
    cells = tuple(dataclasses.replace(c, release=release) for c in seed_cells())
    with pytest.raises(BaseImageError) as failure:
        render_release(release, cells, FIXED_HOST)
    message = str(failure.value)
    assert "nvidia/cuda:11.0-cudnn-devel-ubuntu20.04 was never published upstream" in message
    nearest = message.split("nearest real tags: ", 1)[1].split(". Fix", 1)[0].split(", ")
    assert "nvidia/cuda:11.0.3-cudnn8-devel-ubuntu18.04" in nearest and len(nearest) == 3
    assert all(shipped_table().find(n).status == "available" for n in nearest)
    assert "matrix/facts/docker/base_images.yaml" in message


def test_a_withdrawn_tag_renders_with_its_status():
    files = _files(SEED, seed_cells())
    bake = json.loads(files[BAKE_FILE])
    cu102 = bake["target"]["centos7-cu10_2-pt1_8_2-py37-latest"]
    assert cu102["labels"]["ai.perseus.base-image"] == "nvidia/cuda:10.2-cudnn8-devel-centos7: withdrawn upstream (2023-07-21)"
    assert "`nvidia/cuda:10.2-cudnn8-devel-centos7` withdrawn upstream (2023-07-21)" in files["SUPPORT.md"]


def test_resolution_prefers_an_available_tag_and_falls_back_to_a_withdrawn_one(tmp_path: Path):
    table_file = tmp_path / "base_images.yaml"
    table_file.write_text(
        'recorded: "2026-11-24"\nsources: {s: "https://example.invalid/tags"}\nabsent: []\ntags:\n'
        '  - {repository: nvidia/cuda, tag: "9.9.1-devel-os1", status: withdrawn, withdrawn: "2024-01-02", source: s}\n'
        '  - {repository: nvidia/cuda, tag: "9.9.0-devel-os1", status: available, source: s}\n'
        '  - {repository: nvidia/cuda, tag: "9.8-devel-os1", status: withdrawn, withdrawn: "2024-01-02", source: s}\n'
    )
    table = load_table(table_file)
    assert resolve_cuda_image(table, "9.9", "devel", "os1") == "nvidia/cuda:9.9.0-devel-os1"
    assert check(table, resolve_cuda_image(table, "9.8", "devel", "os1")).label == "withdrawn upstream (2024-01-02)"


@pytest.mark.parametrize(
    "entry, problem",
    [
        ('{repository: r, tag: "1", status: withdrawn, source: s}', "a withdrawn tag needs its `withdrawn` date"),
        ('{repository: r, tag: "1", status: available, source: nowhere}', "cite sources not listed under `sources`: nowhere"),
        ('{repository: r, tag: "1", status: gone, source: s}', "status"),
    ],
)
def test_a_bad_table_is_refused_naming_the_file(tmp_path: Path, entry: str, problem: str):
    table_file = tmp_path / "base_images.yaml"
    table_file.write_text(f'recorded: "2026-11-24"\nsources: {{s: "https://example.invalid"}}\nabsent: []\ntags:\n  - {entry}\n')
    with pytest.raises(BaseImageError, match=str(table_file)) as failure:
        load_table(table_file)
    assert problem in str(failure.value)
