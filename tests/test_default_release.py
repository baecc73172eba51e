"""The release a build under native/ is for, made once: native/release/DEFAULT_RELEASE is the matrix's newest release, and
native/release/perseus_release.py (Python builds) and native/cmake/PerseusRelease.cmake (CMake builds) read
it unless PERSEUS_RELEASE says otherwise."""

from __future__ import annotations

import importlib.util
import re

import pytest

from aiacc_build.matrix.loader import default_release
from aiacc_build.paths import NATIVE_DIR, REPO_ROOT


def _rule():
    spec = importlib.util.spec_from_file_location("perseus_release", NATIVE_DIR / "release" / "perseus_release.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_default_release_file_is_the_matrix_newest_release():
    assert (NATIVE_DIR / "release" / "DEFAULT_RELEASE").read_text().strip() == default_release(), \
        "write the matrix's newest release into native/release/DEFAULT_RELEASE"


def test_the_rule_takes_the_environment_then_the_file(monkeypatch):
    rule = _rule()
    monkeypatch.delenv("PERSEUS_RELEASE", raising=False)
    assert rule.release() == default_release()
    monkeypatch.setenv("PERSEUS_RELEASE", "1.5.0")
    assert rule.release() == "1.5.0"
    assert rule.wheel_version("1.5.0", "2.13.0") == "1.5.0+2.13.0"
    monkeypatch.setenv("PERSEUS_RELEASE", "2.0.0+2.13.0")
    with pytest.raises(RuntimeError, match=r"PERSEUS_RELEASE='2.0.0\+2.13.0' is not a release version such as 2.0.0"):
        rule.release()


def test_no_build_under_native_spells_a_release_of_its_own():
    # a release literal assigned or set (`DEFAULT_RELEASE = "1.5.0"`, `set(PERSEUS_RELEASE "1.5.0" ...)`, `"1.5.0+${...}"`)
    release = re.compile(r'(=\s*|set\(\w+\s+|default-release\s*=\s*)["\']\d+\.\d+\.\d+|["\']\d+\.\d+\.\d+\+')
    offenders = []
    for path in sorted((NATIVE_DIR / "bindings").glob("*/pyproject.toml")) + sorted(NATIVE_DIR.rglob("CMakeLists.txt")) + \
            sorted((NATIVE_DIR / "bindings").glob("*/build_support/*.py")) + [NATIVE_DIR / "runtime" / "setup.py"]:
        if "build" in path.relative_to(NATIVE_DIR).parts[:1] or "/build-" in str(path):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if release.search(code):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert offenders == []
