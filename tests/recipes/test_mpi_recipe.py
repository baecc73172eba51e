"""recipes/mpi/fetch.sh: the MPI bootstrap plugins' headers from pinned Debian packages. A cache holding the
checked .debs unpacks without a network, with dpkg-deb or with ar + tar alike; a .deb whose sha256 is not the
pin is refused, naming the file; the Open MPI plugin built from that root links libmpi.so.40 by soname, the
MPICH one links no MPI library (the engine loads the job's), and neither carries an RPATH into the root."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
RECIPE = REPO_ROOT / "recipes" / "mpi" / "fetch.sh"
CACHE = REPO_ROOT / ".cache" / "mpi"
NO_MIRROR = "http://127.0.0.1:9"  # discard port: nothing answers, the recipe must use what is in its cache


def run(cache: Path, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, MPI_CACHE_DIR=str(cache), MPI_DEB_MIRRORS=NO_MIRROR, **env)
    return subprocess.run(["bash", str(RECIPE)], env=full, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def debs() -> Path:
    """The pinned .debs, fetched once into the repository's cache (what the engine's configure step uses)."""
    proc = subprocess.run(["bash", str(RECIPE)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return CACHE / "debs"


def test_unpacks_offline_with_dpkg_deb_and_with_ar(debs, tmp_path):
    roots = []
    for how in ("dpkg-deb", "ar"):
        cache = tmp_path / how
        shutil.copytree(debs, cache / "debs")
        env = {}
        if how == "ar":  # a builder image without dpkg: a PATH whose dpkg-deb is missing
            bin_dir = tmp_path / "bin-no-dpkg"
            bin_dir.mkdir(exist_ok=True)
            for tool in ("bash", "ar", "tar", "xz", "sha256sum", "mktemp", "mkdir", "cp", "ln", "rm", "mv", "touch",
                         "dirname", "uname", "cat", "printf"):
                found = shutil.which(tool)
                if found and not (bin_dir / tool).exists():
                    (bin_dir / tool).symlink_to(found)
            env["PATH"] = str(bin_dir)
        proc = run(cache, **env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        root = Path(proc.stdout.strip())
        for part in ("openmpi/include/mpi.h", "openmpi/lib/libmpi.so", "mpich/include/mpi.h"):
            assert (root / part).is_file(), part
        roots.append(root)
    assert (roots[0] / "openmpi/include/mpi.h").read_bytes() == (roots[1] / "openmpi/include/mpi.h").read_bytes()
    assert "OMPI_MAJOR_VERSION 4" in (roots[0] / "openmpi/include/mpi.h").read_text()
    assert 'MPICH_VERSION "4.0.2"' in (roots[0] / "mpich/include/mpi.h").read_text()


def test_a_deb_that_is_not_the_pin_is_refused_by_name(debs, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(debs, cache / "debs")
    victim = sorted((cache / "debs").glob("libmpich-dev_*.deb"))[0]
    victim.write_bytes(victim.read_bytes()[:-1] + b"\0")  # one byte changed
    proc = run(cache)
    assert proc.returncode != 0
    assert victim.name in proc.stderr and "pinned sha256" in proc.stderr and "MPI_DEB_MIRRORS" in proc.stderr, proc.stderr


def test_built_plugins_name_their_mpi_and_no_rpath():
    """The engine's build (native/build, dev/test.sh native-core) made both declared plugins from the recipe."""
    build = REPO_ROOT / "native" / "build" / "engine"
    # Open MPI's by its soname; MPICH's none (the engine loads the job's libmpi.so.12 or libmpich.so.12 first)
    needs = {"openmpi": ["libc.so.6", "libmpi.so.40"], "mpich": ["libc.so.6"]}
    for flavour, sonames in needs.items():
        plugin = build / f"libperseus_mpi_{flavour}.so"
        if not plugin.is_file():
            pytest.fail(f"no {plugin}: build native/ with -DPERSEUS_WITH_ENGINE=ON (dev/test.sh, stage native-core)")
        dynamic = subprocess.run(["readelf", "-d", str(plugin)], capture_output=True, text=True, check=True).stdout
        needed = sorted(line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line)
        assert needed == sonames, (flavour, needed)
        assert "RPATH" not in dynamic and "RUNPATH" not in dynamic, dynamic


def test_a_declared_plugin_that_cannot_be_built_fails_the_configure_step_naming_it(debs, tmp_path):
    """A root holding Open MPI's headers but not MPICH's: CMake stops, naming libperseus_mpi_mpich.so, and does
    not fall back to the system's MPICH headers (this machine's dev/lib.sh may have installed libmpich-dev)."""
    prefix_file = REPO_ROOT / ".cache" / "gloo" / "prefix"
    if not prefix_file.is_file():
        pytest.fail("no .cache/gloo/prefix: run bash recipes/gloo/build.sh .cache/gloo/prefix (dev/test.sh, stage gloo)")
    shutil.copytree(debs, tmp_path / "cache" / "debs")
    proc = run(tmp_path / "cache")  # a root of its own, from the checked .debs
    assert proc.returncode == 0, proc.stderr[-2000:]
    root = Path(proc.stdout.strip())
    shutil.rmtree(root / "mpich")
    configure = subprocess.run(
        ["cmake", "-S", str(REPO_ROOT / "native"), "-B", str(tmp_path / "build"), "-DPERSEUS_WITH_CUDA=OFF",
         "-DPERSEUS_WITH_ENGINE=ON", f"-DPERSEUS_GLOO_PREFIX={prefix_file.read_text().strip()}",
         f"-DPERSEUS_MPI_ROOT={root}"], capture_output=True, text=True, timeout=300)
    out = configure.stdout + configure.stderr
    assert configure.returncode != 0, out[-3000:]
    assert "cannot build the declared part libperseus_mpi_mpich.so" in " ".join(out.split()), out[-3000:]
