"""perseus-common: the pure-Python runtime, built once per release with version = the release.

The source keeps one version in native/runtime/pyproject.toml; a release's wheel is built from a
staged copy whose [project].version (and the `__version__` literal, when the package has one) say
the release, so every framework wheel's `perseus-common==<release>` requirement is met by it.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import tomllib

from ..model import ReleaseInfo
from ..naming import common_wheel_filename
from ..paths import NATIVE_DIR
from .cache import BuildCache
from .envs import run_uv, uv_version
from ..hashing import IGNORED_DIRS, file_sha256, tree_digest
from .wheelinfo import read_wheel
from ..errors import BuildError

RUNTIME_DIR = NATIVE_DIR / "runtime"


@dataclass(frozen=True)
class CommonWheel:
    path: Path  # inside the cache entry (or the scratch tree)
    sha256: str
    fingerprint: str  # the cache key
    reused: bool


def stage_runtime(source: Path, dest: Path, version: str) -> None:
    """Copy the runtime source to `dest` with its version set to `version`."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(*IGNORED_DIRS, "*.egg-info", "*.pyc"))
    pyproject = dest / "pyproject.toml"
    text = pyproject.read_text()
    current = tomllib.loads(text).get("project", {}).get("version")
    if current is None:
        raise ValueError(f"{source / 'pyproject.toml'} has no static [project].version to set")
    text, count = re.subn(rf'(?m)^version\s*=\s*"{re.escape(current)}"', f'version = "{version}"', text, count=1)
    if count != 1 or tomllib.loads(text)["project"]["version"] != version:
        raise ValueError(f"could not set the version in {source / 'pyproject.toml'}")
    pyproject.write_text(text)
    init = dest / "perseus" / "__init__.py"
    if init.is_file():
        init.write_text(re.sub(r'(?m)^__version__\s*=\s*"[^"]*"', f'__version__ = "{version}"', init.read_text()))


def build_common(release: ReleaseInfo, cache: BuildCache, source: Path = RUNTIME_DIR) -> CommonWheel:
    inputs = {
        "sources": tree_digest(source),
        "release": release.version,
        "python": sys.version.split()[0],
        "uv": uv_version(),
    }
    expected = common_wheel_filename(release)

    def make(path: Path, meta: dict[str, object]) -> None:
        staged = path / "src"
        stage_runtime(source, staged, release.version)
        run_uv(["build", "--quiet", "--wheel", "--python", sys.executable, "--out-dir", str(path), str(staged)], cache)
        shutil.rmtree(staged)
        built = list(path.glob("*.whl"))
        if [w.name for w in built] != [expected]:
            raise BuildError(f"perseus-common build produced {[w.name for w in built]}, expected {expected}")
        info = read_wheel(built[0])
        if info.version != release.version:
            raise BuildError(f"perseus-common wheel says version {info.version}, expected {release.version}")
        meta["sha256"] = file_sha256(built[0])

    entry = cache.ensure("common", inputs, make)
    wheel = entry.path / expected
    return CommonWheel(path=wheel, sha256=str(entry.meta["sha256"]), fingerprint=entry.key, reused=entry.hit)
