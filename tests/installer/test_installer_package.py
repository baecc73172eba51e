"""The install script's program is a package (src/aiacc_installer) with real imports: each module lints
alone, imports on Python 3.6 with the standard library only, and flattens into the script unchanged."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import aiacc_installer
import pytest
from aiacc_installer.exits import CODE, EXIT_CODES

from aiacc_build.render.installer_program import PACKAGE_DIR, FlattenError, flatten, installer_program

from test_install_script import pyenv_python

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

MODULE_FILES = sorted(p.stem for p in PACKAGE_DIR.glob("*.py") if p.stem != "__init__")


def test_every_module_is_flattened_once():
    assert sorted(aiacc_installer.MODULES) == MODULE_FILES
    assert len(set(aiacc_installer.MODULES)) == len(aiacc_installer.MODULES)


def test_each_module_lints_alone():
    result = subprocess.run([sys.executable, "-m", "pyflakes", str(PACKAGE_DIR)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_only_the_standard_library_and_its_own_modules_are_imported():
    stdlib = set(sys.stdlib_module_names)
    for module in MODULE_FILES:
        tree = ast.parse((PACKAGE_DIR / f"{module}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in stdlib, f"{module}.py imports {name}: standard library only"


def test_every_module_imports_on_python_3_6():
    modules = ", ".join(f"aiacc_installer.{m}" for m in MODULE_FILES if m != "__main__")
    program = f"import sys; sys.path.insert(0, {str(PACKAGE_DIR.parent)!r}); import {modules}; print('ok')"
    result = subprocess.run([pyenv_python("3.6"), "-c", program], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_the_flattened_program_compiles_and_keeps_no_relative_import():
    program = installer_program()
    compile(program, "install_AIACC-Training.sh", "exec")
    assert "from ." not in program
    assert all(f"# --- {m}.py " in program for m in aiacc_installer.MODULES)


def _package(tmp_path: Path, **modules: str) -> Path:
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)
    return tmp_path


def test_a_name_defined_twice_is_refused(tmp_path):
    package = _package(tmp_path, a="def say():\n    pass\n", b="def say():\n    pass\n")
    with pytest.raises(FlattenError, match="say is defined by a.py too"):
        flatten(package, ("a", "b"))


def test_an_import_of_a_later_module_is_refused(tmp_path):
    package = _package(tmp_path, a="from .b import x\n", b="x = 1\n")
    with pytest.raises(FlattenError, match="a.py:1: .b is not a module listed before it"):
        flatten(package, ("a", "b"))


def test_a_renaming_import_is_refused(tmp_path):
    package = _package(tmp_path, a="x = 1\n", b="from .a import x as y\n")
    with pytest.raises(FlattenError, match="would rename"):
        flatten(package, ("a", "b"))


def test_exit_codes_are_one_table():
    codes = [e.code for e in EXIT_CODES]
    assert codes[0] == 0 and 1 not in codes, "0 is success; 1 stays an unexpected crash"
    assert len(set(codes)) == len(codes) and len(CODE) == len(EXIT_CODES)
