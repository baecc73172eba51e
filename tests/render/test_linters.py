"""The real linters on the real rendered files of every shipped release."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from rattler import MatchSpec

from aiacc_build.adapters import adapter_for
from aiacc_build import naming
from aiacc_build.render.docker import BAKE_FILE, unpublished_base
from aiacc_build.render.variants import arch_variants

from .conftest import tool

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_hadolint_every_dockerfile(rendered):
    dockerfiles = sorted(p for out in rendered.values() for p in (out / "docker").iterdir() if "Dockerfile" in p.name)
    assert len(dockerfiles) >= 4
    for dockerfile in dockerfiles:
        result = run(tool("hadolint"), "--no-color", str(dockerfile))
        assert result.returncode == 0, f"{dockerfile}:\n{result.stdout}{result.stderr}"


def test_shellcheck_install_scripts(rendered):
    for out in rendered.values():
        result = run(tool("shellcheck"), "--shell=bash", str(out / naming.INSTALL_SCRIPT_NAME))
        assert result.returncode == 0, result.stdout


def _workflows(rendered):
    return sorted(p for out in rendered.values() for p in (out / "ci").glob("*.yml"))


def test_actionlint_workflows(rendered):
    workflows = _workflows(rendered)
    assert len(workflows) == len(rendered)
    # actionlint also runs shellcheck on every `run:` script when it is on PATH (it is, beside it).
    result = run(tool("actionlint"), "-shellcheck", tool("shellcheck"), *map(str, workflows))
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflows_match_github_schema(rendered):
    result = run(tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, _workflows(rendered)))
    assert result.returncode == 0, result.stdout + result.stderr


def test_conda_files_parse_and_specs_are_valid_match_specs(rendered, real_releases):
    count = 0
    for release in real_releases:
        folder = rendered[release.info.version] / release.info.conda_dir
        for path in sorted(folder.glob("*.yaml")):
            env = yaml.safe_load(path.read_text())
            assert env["name"] == path.stem
            specs = [d for d in env["dependencies"] if isinstance(d, str)]
            for spec in specs:
                MatchSpec(spec)  # raises on anything conda would not parse
            assert any(s.startswith("python=") for s in specs)
            (pip_section,) = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
            assert naming.common_wheel_url(release.info) in pip_section
            count += 1
    assert count == sum(len(v[0].env_pythons) for r in real_releases for v in arch_variants(r.cells))


def test_bake_file_lists_every_image_tag_of_every_cell(rendered, real_releases):
    for release in real_releases:
        bake = json.loads((rendered[release.info.version] / BAKE_FILE).read_text())
        tags = {t for target in bake["target"].values() for t in target["tags"]}
        expected = {
            naming.docker_image_ref(cell, os_type, python, registry=release.info.docker_registry)
            for cell in release.cells
            for os_type in release.info.docker_os_types
            if unpublished_base(cell, os_type) is None  # NVIDIA never published its base (matrix/facts/docker/base_images.yaml)
            for python in cell.env_pythons
        }
        assert expected <= tags
        published = {t for name in bake["group"]["default"]["targets"] for t in bake["target"][name]["tags"]}
        assert published == expected
        for group in bake["group"].values():
            assert set(group["targets"]) <= set(bake["target"])
        for name, target in bake["target"].items():
            dockerfile = rendered[release.info.version] / target["dockerfile"]
            assert dockerfile.is_file(), f"{name}: {dockerfile} missing"
            if "CONDA_ENV_FILE" in target["args"]:
                assert (rendered[release.info.version] / target["args"]["CONDA_ENV_FILE"]).is_file()


@pytest.mark.parametrize("version", ["1.5.0", "2.0.0"])
def test_every_cell_has_its_ci_job_and_table_line(rendered, real_releases, version):
    (release,) = [r for r in real_releases if r.info.version == version]
    out = rendered[version]
    workflow = yaml.safe_load(next((out / "ci").glob("*.yml")).read_text())
    script = (out / naming.INSTALL_SCRIPT_NAME).read_text()
    support = json.loads((out / "support.json").read_text())
    assert len(support["cells"]) == len(release.cells)
    for cell, entry in zip(release.cells, support["cells"]):
        if adapter_for(cell.framework).binding_missing is None:
            assert entry["ci_job"] in workflow["jobs"]
        else:  # no binding: no job that must fail
            assert entry["ci_job"] is None
        assert f" {naming.wheel_path(cell)}\n" in script
        assert entry["wheel"] == naming.wheel_path(cell)
