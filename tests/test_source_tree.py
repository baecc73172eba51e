"""Measurable structure of the source tree: small modules, and one helper per job (sha256, the registry
client, the HTTP range reader), asserted over src/ and native/runtime/."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = (REPO_ROOT / "src", REPO_ROOT / "native" / "runtime")
MAX_LINES = 400
# Modules allowed over MAX_LINES, each with its reason. None today: keep it that way.
SIZE_EXCEPTIONS: dict[str, str] = {}


def modules() -> list[Path]:
    """The tracked Python modules (not setuptools' build/ copies or other untracked output)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", *(str(root) for root in SOURCE_ROOTS)],
                            cwd=REPO_ROOT, capture_output=True, check=True).stdout.decode()
    return sorted(REPO_ROOT / name for name in listed.split("\0") if name.endswith(".py"))


def rel(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def holders(pattern: str) -> set[str]:
    """The modules whose text matches `pattern`."""
    regex = re.compile(pattern)
    return {rel(p) for p in modules() if regex.search(p.read_text(encoding="utf-8"))}


def test_no_module_is_over_400_lines():
    sizes = {rel(p): len(p.read_text(encoding="utf-8").splitlines()) for p in modules()}
    too_big = {name: n for name, n in sizes.items() if n > MAX_LINES and name not in SIZE_EXCEPTIONS}
    assert not too_big, f"modules over {MAX_LINES} lines (split them by reason to change): {too_big}"
    stale = [name for name in SIZE_EXCEPTIONS if sizes.get(name, 0) <= MAX_LINES]
    assert not stale, f"listed as exceptions but no longer over {MAX_LINES} lines: {stale}"


@pytest.mark.parametrize(
    "job, pattern, home, exceptions",
    [
        # src/aiacc_installer runs on the user's stdlib-only Python: it cannot import the tool. The shipped
        # examples are standalone training scripts that print a digest of their weights to compare ranks.
        ("sha256", r"hashlib\.sha256\b", "src/aiacc_build/hashing.py", {"src/aiacc_installer/mirror.py"} | {
            f"native/runtime/perseus/examples/{name}.py"
            for name in ("tensorflow2_eager", "tensorflow2_keras", "tensorflow_sess", "tensorflow_regression_estimator")}),
        ("registry client", r"^class \w*Registry\w*Client\b|pypi\.org/(pypi|simple)", "src/aiacc_build/registry/client.py", set()),
        ("HTTP range reader", r"[\"']Range[\"']\s*:|remotezip", "src/aiacc_build/registry/ranges.py", set()),
    ],
)
def test_one_helper_per_job(job, pattern, home, exceptions):
    assert holders(pattern) - exceptions == {home}, f"the {job} lives in {home} only; use it from there"



def test_one_opt_in_switch():
    """Heavy tests say `@pytest.mark.optin("why")`; only tests/conftest.py reads AIACC_OPTIN."""
    readers = {rel(p) for p in (REPO_ROOT / "tests").rglob("*.py") if re.search(r"environ(\.get\(|\[)[\"']AIACC_OPTIN", p.read_text())}
    assert readers == {"tests/conftest.py"}
