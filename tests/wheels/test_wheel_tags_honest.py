"""Honest platform tags: no wheel the build produced carries a platform tag its shared objects break, checked
against the GLIBC_x.y symbol versions they reference (aiacc_build.wheels.glibc). A wheel built on this machine
(glibc 2.36) carries the tag auditwheel proved; a build that keeps the release's promise (CI's manylinux_2_28
image) keeps the release's tag."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from aiacc_build.paths import DIST_DIR
from aiacc_build.wheels.glibc import broken_promise, wheel_glibc_needs
from aiacc_build.wheels.repair import honest_platform, platform_glibc, wheel_platform

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def _wheel_with(so: Path, folder: Path, platform: str) -> Path:
    wheel = folder / f"demo-1.0-py3-none-{platform}.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(so, "demo/_demo.so")
        zf.writestr("demo/__init__.py", "")
    return wheel


@pytest.fixture(scope="module")
def pthread_object(tmp_path_factory) -> Path:
    """A real shared object that calls pthread_create: GLIBC_2.34 when linked against glibc >= 2.34 (this machine)."""
    if shutil.which("cc") is None:
        pytest.fail("no C compiler: apt-get install gcc")
    folder = tmp_path_factory.mktemp("so")
    (folder / "demo.c").write_text(
        "#include <pthread.h>\nstatic void *run(void *a) { return a; }\n"
        "int demo(void) { pthread_t t; if (pthread_create(&t, 0, run, 0)) return 1; return pthread_join(t, 0); }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-pthread", "-o", str(folder / "demo.so"), str(folder / "demo.c")], check=True)
    return folder / "demo.so"


def test_a_tag_older_than_the_objects_need_is_caught_and_a_fitting_one_passes(pthread_object, tmp_path):
    (need,) = wheel_glibc_needs(_wheel_with(pthread_object, tmp_path, "linux_x86_64"))
    assert need.glibc >= (2, 34) and need.symbols_version == "GLIBC_{}.{}".format(*need.glibc)
    broken = broken_promise(_wheel_with(pthread_object, tmp_path, "manylinux_2_28_x86_64"))
    assert broken and "tagged manylinux_2_28_x86_64 (glibc 2.28)" in broken and need.symbols_version in broken
    fitting = "manylinux_{}_{}_x86_64".format(*need.glibc)
    assert broken_promise(_wheel_with(pthread_object, tmp_path, fitting)) is None
    assert broken_promise(_wheel_with(pthread_object, tmp_path, "linux_x86_64")) is None  # promises nothing
    assert broken_promise(_wheel_with(pthread_object, tmp_path, "manylinux2014_x86_64")) is not None  # glibc 2.17


def test_the_published_tag_is_the_releases_unless_the_build_needs_more():
    assert honest_platform("manylinux_2_28_x86_64", "manylinux_2_28_x86_64") == "manylinux_2_28_x86_64"  # CI's image
    assert honest_platform("manylinux_2_17_x86_64", "manylinux_2_28_x86_64") == "manylinux_2_28_x86_64"
    assert honest_platform("manylinux_2_36_x86_64", "manylinux_2_28_x86_64") == "manylinux_2_36_x86_64"  # here
    assert honest_platform("manylinux_2_36_x86_64", "linux_x86_64") == "linux_x86_64"  # the seed's names: no promise
    assert platform_glibc("manylinux_2_17_x86_64.manylinux2014_x86_64") == (2, 17)
    assert wheel_platform("perseus_torch-2.0.0+2.13.0-cp311-cp311-manylinux_2_36_x86_64.whl") == "manylinux_2_36_x86_64"


def _recorded_wheels(dist: Path) -> list[Path]:
    """Every wheel a build record in `dist` lists as built (and still lies there)."""
    out = []
    for record in sorted(dist.glob("*.record.json")):
        data = json.loads(record.read_text())
        root = dist / data["release"]
        out += [root / c["path"] for c in data["cells"] if c["status"] == "built" and (root / c["path"]).is_file()]
    return out


def test_no_wheel_the_build_produced_breaks_its_tag(local_build):
    """The session's build of the default cells, and every wheel dist/'s build records list (the main job's
    output, CUDA cells built here included): each shared object within what its wheel's tag promises."""
    wheels = _recorded_wheels(local_build.dist) + _recorded_wheels(DIST_DIR)
    assert len(_recorded_wheels(local_build.dist)) >= 3
    problems = [p for p in map(broken_promise, wheels) if p]
    assert not problems, "\n".join(problems)
    for wheel in _recorded_wheels(local_build.dist):
        needs = wheel_glibc_needs(wheel)
        assert needs, f"{wheel.name}: no shared object references glibc"
        promise = platform_glibc(wheel_platform(wheel.name))
        assert promise is not None and max(n.glibc for n in needs) <= promise
