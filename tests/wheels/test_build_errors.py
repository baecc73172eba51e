"""A cell's expected failure (an error of the tool's hierarchy) is recorded and the others go on; a bug in
the tool is not disguised as a failed cell: it propagates (exit 1)."""

from __future__ import annotations

import pytest

from aiacc_build.wheels.binding import BindingBuildError
from aiacc_build.wheels.cache import BuildCache
from aiacc_build.wheels.core import CoreBuildError
from aiacc_build.wheels.driver import Builder, BuildOptions, FrameworkMismatchError
from aiacc_build.wheels.envs import EnvError
from aiacc_build.wheels.repair import RepairError
from aiacc_build.wheels.smoke import SmokeTestError
from aiacc_build.wheels.toolchain import ToolMissingError
from aiacc_build.errors import BuildError, HostServiceError

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_build_errors_are_in_the_hierarchy_with_their_exit_codes():
    for cls in (BindingBuildError, CoreBuildError, EnvError, FrameworkMismatchError, RepairError, SmokeTestError):
        assert issubclass(cls, BuildError) and cls.exit_code == 6
    assert issubclass(ToolMissingError, HostServiceError) and ToolMissingError.exit_code == 9


def _builder(local_build, tmp_path, monkeypatch, error: Exception) -> Builder:
    def fail(self, plan, common, root):
        raise error

    monkeypatch.setattr(Builder, "_build_cell", fail)
    return Builder(BuildCache(local_build.cache_dir), tmp_path / "dist", options=BuildOptions(test=False))


def test_a_failed_cell_is_recorded(local_build, tmp_path, monkeypatch):
    builder = _builder(local_build, tmp_path, monkeypatch, RepairError("auditwheel said no"))
    report = builder.build(local_build.release.info, local_build.torch_plan)
    assert [f.error for f in report.failures] == ["RepairError: auditwheel said no"]


def test_a_bug_in_the_tool_is_not_recorded_as_a_failed_cell(local_build, tmp_path, monkeypatch):
    builder = _builder(local_build, tmp_path, monkeypatch, ZeroDivisionError("a bug"))
    with pytest.raises(ZeroDivisionError, match="a bug"):
        builder.build(local_build.release.info, local_build.torch_plan)
