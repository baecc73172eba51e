"""The parts every framework wheel declares (the engine's MPI bootstrap plugins): a wheel without one, or whose
build manifest does not list it, fails the repair step naming the part."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from aiacc_build.adapters import all_adapters
from aiacc_build.adapters.base import MPI_PLUGINS
from aiacc_build.wheels.repair import MissingPartError, check_parts


def make_wheel(tmp_path: Path, framework: str, files: list[str], listed: list[str]) -> Path:
    wheel = tmp_path / f"perseus_{framework}-2.0.0+1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"perseus/{framework}/build_manifest.json", json.dumps({"mpi_plugins": listed}))
        for name in files:
            zf.writestr(f"perseus/{framework}/{name}", b"\x7fELF")
    return wheel


def test_every_framework_declares_both_plugins():
    for adapter in all_adapters():
        parts = adapter.declared_parts()
        assert sorted(parts) == sorted(f"perseus/{adapter.name}/libperseus_mpi_{m}.so" for m in MPI_PLUGINS)
        assert MPI_PLUGINS == ("openmpi", "mpich")


@pytest.mark.parametrize("framework", [a.name for a in all_adapters()])
def test_a_missing_plugin_fails_naming_it(tmp_path, framework):
    both = ["libperseus_mpi_openmpi.so", "libperseus_mpi_mpich.so"]
    check_parts(make_wheel(tmp_path, framework, both, both))  # complete: passes
    (tmp_path / "a").mkdir()
    with pytest.raises(MissingPartError, match=f"perseus/{framework}/libperseus_mpi_mpich.so .the mpich MPI bootstrap plugin"):
        check_parts(make_wheel(tmp_path / "a", framework, both[:1], both))
    (tmp_path / "b").mkdir()
    with pytest.raises(MissingPartError, match="does not list the declared part .*libperseus_mpi_openmpi.so"):
        check_parts(make_wheel(tmp_path / "b", framework, both, both[1:]))

