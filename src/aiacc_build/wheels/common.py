"""perseus-common: the pure-Python runtime, built once per release with version = the release.

native/runtime takes its version from PERSEUS_RELEASE at build time (its setup.py), so a release's
wheel is built from a copy of the source (the build leaves nothing in the checkout) with that
variable set; every framework wheel's `perseus-common==<release>` requirement is met by it. The CI
workflow builds it with the same function (`aiacc-build wheel common`). The copy's doctor CUDA-driver table
(perseus/_cuda_drivers.py) is generated from the matrix in use, so a CUDA version added to the matrix reaches
the wheel's `perseus doctor` with no other edit.
"""

from __future__ import annotations

import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .. import cuda_drivers
from ..model import ReleaseInfo
from ..naming import common_wheel_filename
from ..paths import NATIVE_DIR
from .cache import BuildCache
from .envs import run_uv, uv_version
from ..hashing import IGNORED_DIRS, bytes_sha256, file_sha256, tree_digest
from .wheelinfo import read_wheel
from ..errors import BuildError

RUNTIME_DIR = NATIVE_DIR / "runtime"


@dataclass(frozen=True)
class CommonWheel:
    path: Path  # inside the cache entry (or the scratch tree)
    sha256: str
    fingerprint: str  # the cache key
    reused: bool


def doctor_driver_table() -> str:
    """perseus/_cuda_drivers.py of the matrix in use (paths.matrix_dir)."""
    return cuda_drivers.render_doctor(cuda_drivers.load())


def stage_runtime(source: Path, dest: Path) -> None:
    """Copy the runtime source to `dest`, without build outputs, with the release rule its setup.py loads beside it
    (native/release, as `dest`/../release) and doctor's CUDA-driver table generated from the matrix in use."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(*IGNORED_DIRS, "build", "*.egg-info", "*.pyc"))
    shutil.copytree(source.parent / "release", dest.parent / "release", ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "perseus" / cuda_drivers.DOCTOR_TABLE.name).write_text(doctor_driver_table(), encoding="utf-8")


def build_common(release: ReleaseInfo, cache: BuildCache, source: Path = RUNTIME_DIR) -> CommonWheel:
    inputs = {
        "sources": tree_digest(source),
        "release_rule": tree_digest(source.parent / "release"),
        "driver_table": bytes_sha256(doctor_driver_table().encode()),
        "release": release.version,
        "python": sys.version.split()[0],
        "uv": uv_version(),
    }
    expected = common_wheel_filename(release)

    def make(path: Path, meta: dict[str, object]) -> None:
        staged = path / "src" / "runtime"
        stage_runtime(source, staged)
        run_uv(
            ["build", "--quiet", "--wheel", "--python", sys.executable, "--out-dir", str(path), str(staged)],
            cache,
            extra_env={"PERSEUS_RELEASE": release.version},
        )
        shutil.rmtree(path / "src")
        built = list(path.glob("*.whl"))
        if [w.name for w in built] != [expected]:
            raise BuildError(f"perseus-common build produced {[w.name for w in built]}, expected {expected}")
        info = read_wheel(built[0])
        with zipfile.ZipFile(built[0]) as wheel:
            written = wheel.read("perseus/_version.py").decode() if "perseus/_version.py" in wheel.namelist() else ""
        if info.version != release.version or f'__version__ = "{release.version}"' not in written:
            raise BuildError(
                f"perseus-common wheel says version {info.version} (perseus/_version.py: {written.strip() or 'missing'}), "
                f"expected {release.version}: native/runtime/setup.py must take it from PERSEUS_RELEASE"
            )
        meta["sha256"] = file_sha256(built[0])

    entry = cache.ensure("common", inputs, make)
    wheel = entry.path / expected
    return CommonWheel(path=wheel, sha256=str(entry.meta["sha256"]), fingerprint=entry.key, reused=entry.hit)
