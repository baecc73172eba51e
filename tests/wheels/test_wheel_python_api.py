"""The check that a binding library is Python-free: real shared libraries compiled here, read from a wheel."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from aiacc_build.wheels.wheelinfo import python_api_imports

pytestmark = [pytest.mark.integration, pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")]


def shared_library(tmp_path: Path, name: str, source: str) -> Path:
    c = tmp_path / f"{name}.c"
    c.write_text(source)
    out = tmp_path / f"{name}.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(c)], check=True)
    return out


def wheel_with(tmp_path: Path, libraries: dict[str, Path]) -> Path:
    wheel = tmp_path / "perseus_torch-0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("perseus/torch/__init__.py", "")
        for member, path in libraries.items():
            zf.write(path, member)
    return wheel


def test_a_library_importing_the_python_c_api_is_named_with_its_symbols(tmp_path):
    uses_python = shared_library(
        tmp_path, "uses", "extern long PyLong_AsLong(void *);\nextern void _Py_Dealloc(void *);\n"
        "long f(void *o) { _Py_Dealloc(o); return PyLong_AsLong(o); }\n"
    )
    clean = shared_library(tmp_path, "clean", "#include <string.h>\nsize_t g(const char *s) { return strlen(s); }\n")
    wheel = wheel_with(tmp_path, {"perseus/torch/_ops.so": uses_python, "perseus_torch.libs/libx.so.1": clean})
    assert python_api_imports(wheel) == {"perseus/torch/_ops.so": ["PyLong_AsLong", "_Py_Dealloc"]}


def test_a_python_free_library_passes(tmp_path):
    clean = shared_library(tmp_path, "clean", "int PyThing = 1;\nint h(void) { return PyThing; }\n")  # defines, imports nothing
    assert python_api_imports(wheel_with(tmp_path, {"perseus/torch/_ops.so": clean})) == {}


def test_the_local_cell_wheel_is_python_free(local_build):
    for result in local_build.report.results:  # the torch, TensorFlow and MXNet wheels
        assert python_api_imports(result.path) == {}, result.path.name
