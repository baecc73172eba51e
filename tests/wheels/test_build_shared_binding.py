"""Cells of one framework build that differ only in their Python share one binding build."""

from __future__ import annotations

import dataclasses
import zipfile

import pytest

from aiacc_build.wheels.cache import BuildCache
from aiacc_build.wheels.driver import Builder, BuildOptions
from aiacc_build.wheels.plan import BuildPlan
from aiacc_build.wheels.toolchain import find_interpreter
from aiacc_build.wheels.wheelinfo import read_wheel

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

OTHER_PYTHON_KEY = "2.0.0/torch-2.13.0/cpu/py3.12/x86_64"


def library_bytes(wheel) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n) for n in zf.namelist() if n.endswith(".so")}


@pytest.mark.skipif(find_interpreter("3.12") is None, reason="no Python 3.12 here")
def test_a_cell_for_another_python_retags_the_shared_binding(local_build, tmp_path):
    first = local_build.torch_result
    assert first.plan.facts is not None and first.plan.facts.interface is not None
    # The 3.12 cell of the same torch build: its framework file (not on this disk) has the same C++
    # interface as the 3.11 one (see test_framework_facts), which is what the shared key names.
    other_cell = next(c for c in local_build.release.cells if c.key == OTHER_PYTHON_KEY)
    other = dataclasses.replace(first.plan, cell=other_cell, interpreter=find_interpreter("3.12"), build_python="3.12")
    builder = Builder(BuildCache(local_build.cache_dir), tmp_path / "dist", options=BuildOptions(test=False))
    report = builder.build(local_build.release.info, BuildPlan("2.0.0", (other,)))
    assert not report.failures, report.failures
    (result,) = report.results
    assert result.binding_build is not None and result.binding_build == first.binding_build
    assert result.core is None and report.core_builds == 0  # nothing compiled: re-tagged (or reused) only
    assert "binding" not in result.steps and "core" not in result.steps
    platform = first.path.name[: -len(".whl")].rsplit("-", 1)[1]  # the platform tag the shared build proved
    assert result.path.name == f"perseus_torch-2.0.0+2.13.0-cp312-cp312-{platform}.whl"
    info = read_wheel(result.path)
    assert info.tags == (f"cp312-cp312-{platform}",) and info.version == "2.0.0+2.13.0"
    assert library_bytes(result.path) == library_bytes(first.path)  # the very same library


def test_without_the_interface_each_python_builds_its_own(local_build, tmp_path):
    """A framework file whose C++ interface is unknown (not inspected) never shares: the key names the cell."""
    first = local_build.torch_result
    unknown = dataclasses.replace(first.plan, facts=dataclasses.replace(first.plan.facts, interface=None))
    builder = Builder(BuildCache(local_build.cache_dir), tmp_path / "dist", options=BuildOptions(test=False))
    shared = builder._shared_binding_inputs(first.plan.cell, first.plan, _spec(builder), _toolchain())
    assert shared is not None and "python" not in shared and "cell" not in shared
    assert builder._shared_binding_inputs(unknown.cell, unknown, _spec(builder), _toolchain()) is None


def _spec(builder):
    from aiacc_build.wheels.binding import read_binding_spec
    from aiacc_build.wheels.plan import binding_dir
    from aiacc_build.model import Framework

    return read_binding_spec(binding_dir(Framework("torch"), builder.native_dir))


def _toolchain():
    from aiacc_build.wheels.toolchain import detect_toolchain

    return detect_toolchain(None)
