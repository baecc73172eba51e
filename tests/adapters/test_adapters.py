"""The framework adapters: every framework of the matrix has one, and a new adapter alone reaches the plan,
every rendered file, doctor and the support list."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from wheels_testkit import RELEASE as BUILD_RELEASE

from aiacc_build import adapters, naming
from aiacc_build.adapters.base import FrameworkAdapter, InstallerDetection
from aiacc_build.adapters.runtime_table import RUNTIME_TABLE, render_runtime_table, stale_runtime_table
from aiacc_build.registry import RegistryClient
from aiacc_build.wheels.plan import CellStatus, plan_cell
from aiacc_build.matrix import load_all
from aiacc_build.matrix.schema import FactsFile
from aiacc_build.model import Arch, Cell, Framework, FrameworkBuild, WheelTagRules
from aiacc_build.paths import MATRIX_DIR, REPO_ROOT
from aiacc_build.render.release import render_release
from aiacc_build.render.support import BuildHost

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


class ToyAdapter(FrameworkAdapter):
    """A framework no release ships: everything the outputs say of it must come from here."""

    name = "toyfw"
    display_name = "ToyFW"
    import_name = "toyfw"
    tag_abbreviation = "ty"
    python_specific = False
    distributions = ("toyfw", "toyfw-cpu")
    own_libraries = ("libtoyfw*",)
    installer = InstallerDetection(cuda_method="distribution-suffix")
    doctor_probe = 'import json, toyfw\nprint(json.dumps({"version": toyfw.__version__, "cuda": None, "cxx11_abi": None}))\n'


HOST = BuildHost(arch="x86_64", pythons=frozenset({"3.11"}))


@pytest.fixture
def toy():
    with adapters.registered(ToyAdapter()) as adapter:
        yield adapter


def _toy_cell() -> Cell:
    fw = Framework("toyfw")  # known only while the adapter is registered
    tags = WheelTagRules(independent_python_tag="py3", platform={fw: "manylinux_2_28_{arch}"},
                         repair_platform={fw: "manylinux_2_28_{arch}"})
    info = dataclasses.replace(BUILD_RELEASE, version="9.9.0", docker_os_types=("ubuntu2204",), wheel_tags=tags)
    return Cell(release=info, release_version=info.version, framework=fw, framework_version="1.0.0", cuda=None,
                python=None, arch=Arch.X86_64, env_pythons=("3.11",), build=FrameworkBuild("toyfw==1.0.0", None, None, None))


def test_every_framework_of_the_matrix_has_an_adapter():
    named = set()
    for release in load_all():
        named |= {c.framework.value for c in release.cells}
    for facts in (MATRIX_DIR / "facts").glob("*.yaml"):
        data = yaml.safe_load(facts.read_text())
        if "framework" in data:
            named.add(FactsFile.model_validate(data).framework)
    assert named and named <= set(adapters.names()), f"no adapter for {named - set(adapters.names())}"


def test_a_framework_without_an_adapter_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown framework 'tensorfow'.*known: torch, tensorflow, mxnet.*did you mean 'tensorflow'"):
        Framework("tensorfow")


def test_an_adapter_must_set_what_the_outputs_need():
    class Incomplete(FrameworkAdapter):
        name = "half"

    with pytest.raises(TypeError, match="does not set display_name"):
        adapters.register(Incomplete())
    assert "half" not in adapters.names()


def test_the_runtime_table_is_generated_from_the_adapters():
    assert not stale_runtime_table(), "run `aiacc-build frameworks runtime-table --write`"
    namespace: dict = {}
    exec(compile(RUNTIME_TABLE.read_text(), str(RUNTIME_TABLE), "exec"), namespace)
    assert [row["name"] for row in namespace["FRAMEWORKS"]] == list(adapters.names())


def test_a_throwaway_adapter_reaches_plan_render_and_support_with_no_other_edit(toy, tmp_path, monkeypatch):
    cell = _toy_cell()
    # plan: a binding folder and the exact framework file on disk make it buildable here
    native = tmp_path / "native"
    (native / "bindings" / "toyfw").mkdir(parents=True)
    (native / "bindings" / "toyfw" / "pyproject.toml").write_text(
        "[build-system]\nrequires = ['scikit-build-core>=0.10', 'toyfw-build-helper']\n"
        "build-backend = 'scikit_build_core.build'\n[project]\nname='perseus_toyfw'\n")
    monkeypatch.setattr("aiacc_build.render.ci.NATIVE_DIR", native)  # CI jobs install the binding's build requires
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "toyfw-1.0.0-py3-none-any.whl").write_bytes(b"")
    client = RegistryClient(tmp_path / "registry-cache", offline=True)
    plan = plan_cell(cell, None, client, native, local_dirs=[wheels], index_dirs=[])
    assert plan.status is CellStatus.BUILD and plan.framework.filename == "toyfw-1.0.0-py3-none-any.whl", plan.reason

    files = {f.path: f.content for f in render_release(cell.release, [cell], HOST)}
    wheel = "cpu/perseus_toyfw-9.9.0+1.0.0-py3-none-manylinux_2_28_x86_64.whl"
    assert naming.wheel_path(cell) == wheel
    # conda: one environment file named by the matrix's rule, installing the framework and the wheel
    conda = files["conda/latest/toyfw_1.0.0_cpu_py311.yaml"]
    assert "toyfw==1.0.0" in conda and wheel.split("/")[1].replace("+", "%2B") in conda
    # Docker: the adapter's tag abbreviation
    assert "perseus-training:ubuntu2204-cpu-ty1.0.0-py311-latest" in files["docker-bake.json"]
    # CI: a job building its binding folder, repairing without its libraries, running its self-test
    workflow = yaml.safe_load(files["ci/build-wheels-9.9.0.yml"])
    job = workflow["jobs"]["toyfw-1_0_0-cpu-x86_64"]
    build = next(s for s in job["steps"] if s.get("name") == "Build, repair and test")
    assert build["run"].endswith("native/bindings/toyfw")
    # repair is the tool's own step, whose exclusion list is adapters.excluded_libraries() (libtoyfw* included)
    assert "aiacc-build wheel repair" in build["env"]["CIBW_REPAIR_WHEEL_COMMAND"]
    assert "libtoyfw*" in adapters.excluded_libraries()
    assert "toyfw-build-helper" in build["env"]["CIBW_BEFORE_BUILD"]
    assert build["env"]["CIBW_TEST_COMMAND"].endswith(
        "wheel selftest --release 9.9.0 --framework toyfw --framework-version 1.0.0 --python python")
    # install script: the cell, the --framework spelling and the detection row
    script = files[naming.INSTALL_SCRIPT_NAME]
    assert f"toyfw 1.0.0 cpu any x86_64 {wheel}\n" in script
    assert "  toyfw | ty) framework=toyfw ;;" in script
    assert '"distributions": ["toyfw", "toyfw-cpu"]' in script and '"selftest_module": "perseus.toyfw._selftest"' in script
    # support list: the cell and its CI job (its status comes from a build record; there is none here)
    (entry,) = json.loads(files["support.json"])["cells"]
    assert (entry["framework"], entry["status"], entry["ci_job"]) == ("toyfw", "not built yet", "toyfw-1_0_0-cpu-x86_64")
    assert "| toyfw | 1.0.0 | CPU |" in files["SUPPORT.md"]


def test_a_throwaway_adapter_without_a_binding_is_listed_not_built(toy, monkeypatch):
    monkeypatch.setattr(ToyAdapter, "binding_missing", "not supported yet: no toyfw binding")
    cell = _toy_cell()
    files = {f.path: f.content for f in render_release(cell.release, [cell], HOST)}
    assert "toyfw-1_0_0-cpu-x86_64" not in yaml.safe_load(files["ci/build-wheels-9.9.0.yml"])["jobs"]
    assert "#   toyfw 1.0.0 CPU x86_64: not supported yet: no toyfw binding" in files["ci/build-wheels-9.9.0.yml"]
    (entry,) = json.loads(files["support.json"])["cells"]
    assert (entry["status"], entry["ci_job"], entry["reason"]) == ("not built yet", None, "not supported yet: no toyfw binding")


def test_doctor_reports_a_throwaway_framework_from_the_generated_table(toy, tmp_path):
    """The runtime table made with the throwaway adapter registered: doctor finds and probes it."""
    site = tmp_path / "site"
    shutil.copytree(REPO_ROOT / "native" / "runtime" / "perseus", site / "perseus",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "perseus" / "_frameworks.py").write_text(render_runtime_table())
    (site / "toyfw").mkdir()
    (site / "toyfw" / "__init__.py").write_text("__version__ = '1.0.0'\n")
    (site / "toyfw-1.0.0.dist-info").mkdir()
    (site / "toyfw-1.0.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: toyfw\nVersion: 1.0.0\n")
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    proc = subprocess.run([sys.executable, "-m", "perseus.cli", "doctor", "--json"], env={**env, "PYTHONPATH": str(site)},
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert report["frameworks"]["toyfw"]["distribution"] == "toyfw"
    assert report["frameworks"]["toyfw"]["version"] == "1.0.0", report["frameworks"]["toyfw"]


def test_mxnet_has_a_binding_and_its_companions(tmp_path):
    mx = adapters.adapter_for("mxnet")
    assert mx.binding_missing is None
    assert (mx.binding_dir(REPO_ROOT / "native") / "pyproject.toml").is_file()
    # libmxnet.so lies in the package folder itself: that is what auditwheel must see
    (tmp_path / "mxnet").mkdir()
    assert mx.library_dirs(tmp_path) == [tmp_path / "mxnet"]
    assert mx.build_environment(tmp_path) == {"PERSEUS_MXNET_DIR": str(tmp_path / "mxnet")}
    # mxnet 1.9.1 declares numpy<2 but needs numpy<1.24: every env and rendered pip command adds it
    assert adapters.companion_requirements("mxnet") == ("numpy<1.24",)
    assert adapters.companion_requirements("mxnet_cu112") == ("numpy<1.24",)
    assert adapters.companion_requirements("torch") == ()
    from aiacc_build.render.pip import framework_install_args

    build = FrameworkBuild("mxnet==1.9.1", None, None, None)
    assert framework_install_args(build) == ("mxnet==1.9.1", "numpy<1.24")
