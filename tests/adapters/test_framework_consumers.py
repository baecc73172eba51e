"""The framework list is the adapters' alone: perseus-common (perseus.config's honoured_by, the unknown-name
warning), docs/variables.md's columns and the dev scripts read it, through the generated
perseus/_frameworks.py or `aiacc-build frameworks list --names`. A throwaway adapter reaches each of them
with no other edit (docs/extending.md, "Add a framework")."""

from __future__ import annotations

import importlib
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from aiacc_build import adapters, variables
from aiacc_build.adapters.base import FrameworkAdapter, InstallerDetection
from aiacc_build.adapters.runtime_table import render_runtime_table
from aiacc_build.adapters.cli import frameworks
from aiacc_build.paths import NATIVE_DIR, REPO_ROOT

DEV_SCRIPTS = sorted((REPO_ROOT / "dev").glob("*.sh"))


class ThrowawayAdapter(FrameworkAdapter):
    name = "toyfw"
    display_name = "ToyFW"
    import_name = "toyfw"
    tag_abbreviation = "ty"
    python_specific = False
    distributions = ("toyfw",)
    framework_dir_variable = "PERSEUS_TOYFW_DIR"
    installer = InstallerDetection(cuda_method="distribution-suffix")
    doctor_probe = 'import json, toyfw\nprint(json.dumps({"version": toyfw.__version__}))\n'


@pytest.fixture
def perseus_with_toy(tmp_path) -> Path:
    """A copy of perseus-common's source whose generated framework table was made with the throwaway adapter."""
    copy = tmp_path / "perseus"
    shutil.copytree(NATIVE_DIR / "runtime" / "perseus", copy, ignore=shutil.ignore_patterns("__pycache__"))
    with adapters.registered(ThrowawayAdapter()):
        (copy / "_frameworks.py").write_text(render_runtime_table())
    return copy


def test_the_throwaway_framework_honours_every_engine_variable(perseus_with_toy):
    config = variables.declaration(perseus_with_toy)
    assert config.RUNTIMES == ("torch", "tensorflow", "mxnet", "toyfw", "caffe")
    engine_read = [spec for spec in config.VARIABLES if "caffe" in spec.honoured_by and "mxnet" in spec.honoured_by]
    assert engine_read, "no variable is read by the engine's every consumer"
    assert all("toyfw" in spec.honoured_by for spec in engine_read)
    torch_only = config.spec_of("PERSEUS_ACCUMULATE_N_STEPS")
    assert torch_only.honoured_by == ("torch",)


def test_the_throwaway_framework_gets_its_column_in_the_reference_page(perseus_with_toy):
    page = variables.render_reference_page(perseus_with_toy)
    assert "| since | torch | tensorflow | mxnet | toyfw | caffe |" in page
    row = next(line for line in page.splitlines() if line.startswith("| `PERSEUS_CYCLE_TIME_MS`"))
    assert row.endswith("| yes | yes | yes | yes | yes |")
    # the C header has no framework columns: the throwaway adapter leaves it as it is
    assert variables.render_c_header(perseus_with_toy) == variables.render_c_header()


def test_the_throwaway_frameworks_build_input_is_no_unknown_variable(perseus_with_toy):
    package = variables.declaration(perseus_with_toy).__package__
    names = importlib.import_module(f"{package}.variable_names")
    assert "PERSEUS_TOYFW_DIR" in names.NOT_CONFIGURATION
    # inherited from a binding build: no warning; a name nothing declares still gets one
    assert names.unknown_variables({"PERSEUS_TOYFW_DIR": "/site/toyfw", "PERSEUS_TOYFW_DRI": "x"}) == [
        ("PERSEUS_TOYFW_DRI", None)]


def test_the_dev_scripts_read_the_frameworks_from_the_tool():
    with adapters.registered(ThrowawayAdapter()):
        listed = CliRunner().invoke(frameworks, ["list", "--names"])
    assert listed.exit_code == 0, listed.output
    assert listed.output.split() == [*adapters.names(), "toyfw"]
    assert "frameworks list --names" in (REPO_ROOT / "dev" / "lib.sh").read_text()
    for script in DEV_SCRIPTS:
        code = "\n".join(line.split("#")[0] for line in script.read_text().splitlines())
        named = [n for n in adapters.names() if re.search(rf"\b{n}\b", code)]
        assert not named, f"{script.relative_to(REPO_ROOT)} names {named}: read `aiacc-build frameworks list --names`"


@pytest.mark.parametrize("adapter", adapters.all_adapters(), ids=adapters.names())
def test_every_binding_has_its_dev_environment(adapter):
    if adapter.binding_missing is None:
        assert (adapter.binding_dir(NATIVE_DIR) / "dev_env.sh").is_file(), "dev/test.sh runs it as the binding's stage"


@pytest.mark.parametrize("adapter", adapters.all_adapters(), ids=adapters.names())
def test_a_frameworks_package_lives_in_its_binding_not_in_perseus_common(adapter):
    assert not (NATIVE_DIR / "runtime" / "perseus" / adapter.name).exists(), "perseus-common ships every perseus.* it holds"
    if adapter.binding_missing is None:
        assert (adapter.binding_dir(NATIVE_DIR) / "perseus" / adapter.name / "__init__.py").is_file()


@pytest.mark.parametrize("adapter", adapters.all_adapters(), ids=adapters.names())
def test_build_variables_are_what_the_build_environment_sets(adapter, tmp_path):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    assert sorted(adapter.build_environment(site)) == sorted(adapter.build_variables)


def test_honoured_by_names_only_known_runtimes():
    config = variables.declaration()
    assert config.RUNTIMES == (*adapters.names(), "caffe")
    for spec in config.VARIABLES:
        assert set(spec.honoured_by) <= set(config.RUNTIMES), spec.name
