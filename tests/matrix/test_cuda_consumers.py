"""A CUDA version is matrix data alone (docs/extending.md, "Add a CUDA version"): a throwaway CUDA 99.1, added by
editing only files of a copy of matrix/ that $AIACC_MATRIX_DIR points at, reaches the install script's driver and
cell tables, perseus doctor's driver table (as perseus-common's wheel stages it), the cell's Docker bases, its conda
file and the CI workflow, with no other edit."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from aiacc_build import naming
from aiacc_build.base_images import BaseImageError
from aiacc_build.checks.conda_check import check_conda
from aiacc_build.cli import main
from aiacc_build.conda_table import default_conda_table
from aiacc_build.matrix import load_release, select_cells
from aiacc_build.paths import MATRIX_DIR, MATRIX_ENV, NATIVE_DIR
from aiacc_build.render import BuildHost
from aiacc_build.render.installer_program import HEREDOC_END
from aiacc_build.render.output import write_files
from aiacc_build.render.release import render_release
from aiacc_build.wheels.common import stage_runtime

CUDA = "99.1"
DRIVER = "990.10.01"
TORCH = "2.15.0"
NO_LOCAL_IMAGES = BuildHost(arch="", pythons=frozenset())  # no nvcc probe: nothing is built here

THROWAWAY_BUILD = f"""\
      - accelerator: cuda{CUDA}
        requirement: torch=={TORCH}+cu991
        index_url: https://download.pytorch.org/whl/cu991
        cuda_variant: cu991
        pythons: pypi
        arches: [x86_64]
        cxx11_abi: true
        source: previous-versions
"""
THROWAWAY_TAGS = "".join(
    f'  - {{repository: nvidia/cuda, tag: "{CUDA}.0-{tag}", status: available, source: nvidia-supported}}\n'
    for tag in ("cudnn-devel-ubuntu22.04", "cudnn-devel-ubuntu24.04", "devel-rockylinux8")
)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path.name} no longer holds {old!r}: update this test's edit"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _add_throwaway_cuda(matrix: Path, *, base_images: bool = True) -> None:
    """The checklist's matrix edits, nothing else."""
    facts = matrix / "facts"
    _edit(facts / "torch.yaml", f'  "{TORCH}":\n    builds:\n', f'  "{TORCH}":\n    builds:\n' + THROWAWAY_BUILD)
    _edit(matrix / "releases" / "2.0.0.yaml", 'cuda: {min: "11.8", max: "13.9"}', 'cuda: {min: "11.8", max: "99.9"}')
    _edit(facts / "cuda_drivers.yaml", "toolkits:\n", f'toolkits:\n  "{CUDA}": "{DRIVER}"\n')
    _edit(facts / "cuda_drivers.yaml", "minor_version_compatibility:\n", f'minor_version_compatibility:\n  "99": "{DRIVER}"\n')
    _edit(facts / "conda" / "packages.yaml", '"13.2", "13.3", "13.4"]\n      cudnn:', f'"13.2", "13.3", "13.4", "{CUDA}"]\n      cudnn:')
    if base_images:
        _add_throwaway_cuda_bases(matrix)


def _add_throwaway_cuda_bases(matrix: Path) -> None:
    _edit(matrix / "facts" / "docker" / "base_images.yaml", "tags:\n", "tags:\n" + THROWAWAY_TAGS)


@pytest.fixture
def matrix_copy(tmp_path, monkeypatch) -> Path:
    copy = tmp_path / "matrix"
    shutil.copytree(MATRIX_DIR, copy)
    monkeypatch.setenv(MATRIX_ENV, str(copy))
    return copy


@pytest.fixture
def rendered(matrix_copy, tmp_path) -> tuple[Path, list]:
    """Release 2.0.0 of the copy with the throwaway CUDA, rendered into tmp_path/dist/2.0.0."""
    _add_throwaway_cuda(matrix_copy)
    release = load_release("2.0.0")
    cells = select_cells(release.cells, cuda=CUDA)
    assert cells and {(c.framework.value, c.framework_version, c.arch.value) for c in cells} == {("torch", TORCH, "x86_64")}
    out = tmp_path / "dist" / "2.0.0"
    write_files(out, render_release(release.info, release.cells, NO_LOCAL_IMAGES))
    return out, cells


def test_the_install_script_knows_its_driver_and_its_cells(rendered):
    out, cells = rendered
    script = (out / naming.INSTALL_SCRIPT_NAME).read_text()
    for cell in cells:
        assert f"torch {TORCH} {CUDA} {cell.python} x86_64 {naming.wheel_path(cell)}" in script
    program = re.search(rf"<<'{HEREDOC_END}'\n(.*?)\n{HEREDOC_END}\n", script, re.S).group(1)
    installer: dict = {"__name__": "install_script"}
    exec(compile(program, naming.INSTALL_SCRIPT_NAME, "exec"), installer)
    assert installer["DRIVER_FOR_CUDA"][0] == (CUDA, DRIVER)
    assert installer["cuda_for_driver"](DRIVER) == CUDA and installer["cuda_for_driver"]("580.65.06") == "13.0"


def test_doctor_in_perseus_common_knows_its_driver(matrix_copy, tmp_path, monkeypatch):
    from perseus import doctor

    _add_throwaway_cuda(matrix_copy)
    assert doctor._min_driver(CUDA) is None  # the checkout's table has no CUDA 99
    staged = tmp_path / "src" / "runtime"
    stage_runtime(NATIVE_DIR / "runtime", staged)  # what `aiacc-build wheel common` builds the wheel from
    table: dict = {}
    exec((staged / "perseus" / "_cuda_drivers.py").read_text(), table)
    assert ((99, 0), DRIVER) in table["MIN_DRIVER"]
    monkeypatch.setattr(doctor, "MIN_DRIVER", table["MIN_DRIVER"])
    assert doctor._min_driver(CUDA) == DRIVER and doctor._min_driver("99.7") == DRIVER
    assert doctor._min_driver("13.0") == "580.65.06"


def test_the_cells_images_build_on_its_nvidia_bases(rendered):
    out, cells = rendered
    bake = json.loads((out / "docker-bake.json").read_text())["target"]
    for cell in cells:
        for os_type, os_name in (("ubuntu2204", "ubuntu22.04"), ("ubuntu2404", "ubuntu24.04")):
            target = bake[naming.docker_bake_target(cell, os_type, cell.python)]
            assert target["args"]["BASE_IMAGE"] == f"nvidia/cuda:{CUDA}.0-cudnn-devel-{os_name}"
            assert target["args"]["CUDA_VERSION"] == CUDA
            assert target["labels"]["ai.perseus.base-image"].endswith(": available")
    builder = bake[naming.builder_bake_target(cells[0].release, CUDA, "x86_64")]
    assert builder["args"]["CUDA_IMAGE"] == f"nvidia/cuda:{CUDA}.0-devel-rockylinux8"


def test_a_cuda_without_its_base_images_is_refused_with_the_file_to_edit(matrix_copy):
    _add_throwaway_cuda(matrix_copy, base_images=False)
    release = load_release("2.0.0")
    with pytest.raises(BaseImageError, match=rf"nvidia/cuda:{CUDA}-cudnn-devel-ubuntu22.04 .*matrix/facts/docker/base_images.yaml"):
        render_release(release.info, release.cells, NO_LOCAL_IMAGES)


def test_its_conda_files_pin_it_and_keep_the_channel_table(rendered):
    out, cells = rendered
    release = load_release("2.0.0")
    for cell in cells:
        text = (out / cell.release.conda_dir / naming.conda_filename(cell, cell.python)).read_text()
        assert f"- \"cuda-version={CUDA}\"" in text
        assert f"\"torch=={TORCH}+cu991\"" in text and "https://download.pytorch.org/whl/cu991" in text
    report = check_conda([release], out.parent, default_conda_table())
    assert [f for f in report.findings if CUDA in f.file] == []


def test_a_cuda_version_conda_forge_lacks_is_a_finding(matrix_copy, tmp_path):
    _add_throwaway_cuda(matrix_copy)
    packages = matrix_copy / "facts" / "conda" / "packages.yaml"
    _edit(packages, f', "{CUDA}"]\n      cudnn:', "]\n      cudnn:")
    release = load_release("2.0.0")
    files = [f for f in render_release(release.info, release.cells, NO_LOCAL_IMAGES) if f.kind == "conda"]
    write_files(tmp_path / "dist" / "2.0.0", files)
    report = check_conda([release], tmp_path / "dist", default_conda_table())
    assert any(CUDA in f.file and "cuda-version" in f.subject + f.message for f in report.findings)


def test_the_ci_workflow_builds_it(rendered):
    out, cells = rendered
    workflow = (out / "ci" / naming.ci_workflow_filename(cells[0].release)).read_text()
    group_id = f"torch-{TORCH.replace('.', '_')}-cuda991-x86_64"
    assert f"  {group_id}:" in workflow
    assert f"PERSEUS_CUDA={CUDA}" in workflow
    assert naming.builder_image_tag(cells[0].release, CUDA, "x86_64") in workflow
    for cell in cells:
        assert naming.wheel_path(cell) in workflow


def test_the_checkouts_matrix_knows_no_throwaway_cuda():
    assert select_cells(load_release("2.0.0").cells, cuda=CUDA) == []


def test_the_command_line_reads_the_copy(matrix_copy, capsys):
    _add_throwaway_cuda(matrix_copy, base_images=False)
    assert main(["matrix", "validate"]) == 3  # MatrixError: the base images the copy lacks
    assert f"nvidia/cuda:{CUDA}-cudnn-devel-ubuntu22.04 was never published" in capsys.readouterr().err
    _add_throwaway_cuda_bases(matrix_copy)
    assert main(["matrix", "validate"]) == 0
    assert main(["matrix", "driver-tables"]) == 0  # the checkout's committed tables are not the copy's
    assert "stale: " in capsys.readouterr().out
