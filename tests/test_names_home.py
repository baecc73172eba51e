"""Every name is computed once, in its home: naming.py for the matrix's names, a framework's adapter
(adapters/base.py, from the adapter's own fields) for the names that are the framework's, the matrix
loader for the default release. No other module rebuilds them: each name's f-string pattern is looked
for in every other module of the tool and of perseus-common."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
ROOTS = (REPO_ROOT / "src" / "aiacc_build", REPO_ROOT / "native" / "runtime" / "perseus", REPO_ROOT / "native" / "release",
         REPO_ROOT / "native" / "cmake", REPO_ROOT / "native" / "bindings", REPO_ROOT / "dev")
# src/aiacc_installer is not searched: it runs on the user's stdlib-only Python and reads the names from
# the table the script embeds (made by naming.py); it cannot import the tool.

# home -> {name: the pattern that rebuilds it}
HOMES: dict[str, dict[str, str]] = {
    "src/aiacc_build/model.py": {  # a cell's key needs it, and the model is a leaf (naming re-exports it)
        "accelerator `cuda11.0`/`cpu` (cell key, conda file, facts, image tags)": r'f"cuda\{(?!cuda_nodot)',
    },
    "src/aiacc_build/naming.py": {
        "accelerator without the dot `cuda110` (mirror folder, CI job id)": r"f\"cuda\{cuda_nodot",
        "Docker tag accelerator `cu11.0`": r'f"cu\{',
        "CUDA or `cpu` of build inputs and the installer table": r'\bor "cpu"|"cpu" if \w[\w.]* is None else \w',
        "wheel version `<release>+<framework version>`": r"\}\+\$?\{|%s\+%s",
        "CPython tags `cp311`": r'f"cp\{',
    },
    "src/aiacc_build/adapters/base.py": {
        "binding distribution `perseus_<framework>`": r'f"perseus_\{',
        "binding folder `native/bindings/<framework>`": r'"bindings"\s*/',
    },
    "src/aiacc_build/matrix/loader.py": {
        "default release (the newest in matrix/releases)": r"load_all\(\)\[-1\]",
    },
}
# (module, name) pairs allowed to spell a name themselves, each with its reason.
EXCEPTIONS = {
    ("src/aiacc_build/model.py", "CUDA or `cpu` of build inputs and the installer table"):
        "the accelerator label's CPU branch spells `cpu` as this name does",
    ("native/runtime/perseus/horovod_kit/manifest.py", "wheel version `<release>+<framework version>`"):
        "perseus-common advises which wheel to install (doctor, the bindings' manifest checks); it cannot import the "
        "build tool",
    ("native/release/perseus_release.py", "wheel version `<release>+<framework version>`"):
        "the binding builds' rule (their metadata providers run without the build tool)",
    ("native/cmake/PerseusRelease.cmake", "wheel version `<release>+<framework version>`"):
        "the same rule for the CMake builds of the bindings",
}


def modules() -> list[Path]:
    """Python, CMake and shell sources (the builds under native/ and dev/ spell names too)."""
    return sorted(p for root in ROOTS for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and (p.suffix in (".py", ".cmake", ".sh") or p.name == "CMakeLists.txt"))


CASES = [(home, name, pattern) for home, names in HOMES.items() for name, pattern in names.items()]


@pytest.mark.parametrize("home, name, pattern", CASES, ids=[name for _, name, _ in CASES])
def test_a_name_is_made_in_its_home_only(home, name, pattern):
    regex = re.compile(pattern)
    home_path = REPO_ROOT / home
    assert regex.search(home_path.read_text()), f"{home} no longer makes {name}: update this test's table"
    others = []
    for path in modules():
        rel = path.relative_to(REPO_ROOT).as_posix()
        if path == home_path or (rel, name) in EXCEPTIONS:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("  # ")[0]  # a trailing comment may name it
            if regex.search(code) and not code.lstrip().startswith("#"):
                others.append(f"{rel}:{number}: {line.strip()}")
    assert not others, f"{name} is {home}'s to make; these rebuild it:\n" + "\n".join(others)


def test_exceptions_are_still_needed():
    for (module, name), _reason in EXCEPTIONS.items():
        home = next(h for h, names in HOMES.items() if name in names)
        assert re.search(HOMES[home][name], (REPO_ROOT / module).read_text()), f"{module} no longer needs its exception"
