"""`check conda` over every rendered environment file of every shipped release."""

from __future__ import annotations

import pytest

from aiacc_build.checks.conda_check import check_conda, expected_files

from .conftest import release

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_every_shipped_environment_file_keeps_every_rule(releases, rendered_dist, table):
    report = check_conda(releases, rendered_dist, table)
    assert report.findings == []
    assert report.checked["files"] == sum(len(expected_files(r.cells)) for r in releases)
    assert report.checked["specs"] >= 3 * report.checked["files"]


def test_seed_torch_before_151_and_lts_py39_come_from_pip(rendered_dist, releases):
    # What the check found in the renderer: these PyTorch builds are on no conda channel.
    conda = rendered_dist / "1.5.0" / "conda" / "latest"
    for name, requirement in [
        ("torch_1.2.0_cuda10.0_py36.yaml", "torch==1.2.0"),
        ("torch_1.4.0_cuda10.1_py38.yaml", "torch==1.4.0"),
        ("torch_1.8.2_cuda10.2_py39.yaml", "torch==1.8.2+cu102"),
    ]:
        text = (conda / name).read_text()
        assert "pytorch=" not in text and f'"{requirement}"' in text and "cudatoolkit=" in text, name
    assert '"pytorch=1.8.2"' in (conda / "torch_1.8.2_cuda10.2_py38.yaml").read_text()
    assert '"pytorch=1.5.1"' in (conda / "torch_1.5.1_cuda10.1_py38.yaml").read_text()


def test_a_broken_file_is_reported_with_its_path_package_and_rule(dist_copy, releases, table):
    target = dist_copy / "1.5.0" / "conda" / "latest" / "torch_1.7.1_cuda11.0_py36.yaml"
    target.write_text(target.read_text().replace('"cudatoolkit=11.0"', '"cudatoolkit=11.1"'))
    report = check_conda([release(releases, "1.5.0")], dist_copy, table)
    assert {(f.file, f.rule, f.subject) for f in report.errors} == {
        ("1.5.0/conda/latest/torch_1.7.1_cuda11.0_py36.yaml", "pytorch-build", "pytorch=1.7.1"),
        ("1.5.0/conda/latest/torch_1.7.1_cuda11.0_py36.yaml", "cell-cuda", "cudatoolkit"),
    }


def test_missing_and_left_over_files(dist_copy, releases, table):
    folder = dist_copy / "2.0.0" / "conda" / "latest"
    (folder / "torch_2.13.0_cpu_py311.yaml").rename(folder / "torch_2.11.0_cpu_py311.yaml")
    report = check_conda([release(releases, "2.0.0")], dist_copy, table)
    assert {(f.rule, f.subject) for f in report.errors} == {
        ("missing-file", "torch_2.13.0_cpu_py311.yaml"),
        ("unexpected-file", "torch_2.11.0_cpu_py311.yaml"),
        ("env-name", "name"),
        ("use-line", "CONDA_DEFAULT_CHANNELS=conda-forge conda env create -f torch_2.13.0_cpu_py311.yaml"),  # names the old name
    }
