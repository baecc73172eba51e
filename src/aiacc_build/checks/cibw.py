"""A release's own cibuildwheel, installed once into a cached venv, asked which identifiers a job builds.

Each version lives in `.cache/cibuildwheel/<version>/` (gitignored), made with this interpreter
(cibuildwheel 2.16.5 runs on 3.8-3.12, 4.x on 3.11+; the tool's own Python is 3.11). When one of its
dependency pins cannot be met from the reachable index (4.3.5 pins a certifi newer than the index
holds), cibuildwheel is installed without dependencies and its dependencies in one more pip call,
the unmet pin relaxed to the newest release the index has; `notes` says so (listing identifiers
never uses certifi, which only verifies downloads).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ..errors import ConfigurationError
from ..paths import REPO_ROOT

CACHE_DIR = REPO_ROOT / ".cache" / "cibuildwheel"
MARKER = "aiacc-cibuildwheel.json"
# A stand-in package for a job whose package folder has no pyproject.toml yet: no requires-python,
# no [tool.cibuildwheel], so only the job's own environment selects.
STANDIN_PYPROJECT = '[project]\nname = "perseus-standin"\nversion = "0"\n'


@dataclass
class CibuildwheelEnv:
    version: str
    venv: Path
    notes: list[str] = field(default_factory=list)

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args], capture_output=True, text=True)


_UNSATISFIED = re.compile(r"satisfies the requirement ([A-Za-z0-9_.\-\[\]]+)")


def _install_relaxing_unavailable(python: Path, version: str, work: Path, first_error: str) -> list[str]:
    """cibuildwheel without dependencies, then its dependencies in one pip call, each pin that the
    reachable index cannot meet (named by pip's error) relaxed to the newest release it has."""
    download = subprocess.run(
        [str(python), "-m", "pip", "download", "-q", "--no-deps", "-d", str(work), f"cibuildwheel=={version}"],
        capture_output=True,
        text=True,
    )
    wheels = list(work.glob("cibuildwheel-*.whl"))
    if download.returncode != 0 or not wheels:
        raise ConfigurationError(f"cannot download cibuildwheel {version} from the package index: {download.stderr.strip()[-400:]}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        (metadata_name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(wheel.read(metadata_name).decode("utf-8"))
    requirements = [
        Requirement(line)
        for line in metadata.get_all("Requires-Dist") or []
        if Requirement(line).marker is None or Requirement(line).marker.evaluate({"extra": ""})
    ]
    installed = _pip(python, "--no-deps", str(wheels[0]))
    if installed.returncode != 0:
        raise ConfigurationError(f"cannot install cibuildwheel {version}: {installed.stderr.strip()[-400:]}")
    relaxed: set[str] = set()
    error = first_error
    for _ in range(len(requirements) + 1):
        relaxed |= {canonicalize_name(m) for m in _UNSATISFIED.findall(error)}
        if not relaxed:
            break
        args = [r.name if canonicalize_name(r.name) in relaxed else str(r).split(";", 1)[0].strip() for r in requirements]
        result = _pip(python, *args)
        if result.returncode == 0:
            pins = [str(r).split(";", 1)[0].strip() for r in requirements if canonicalize_name(r.name) in relaxed]
            return [f"cibuildwheel {version}: {p} is not on the reachable package index; installed the newest {Requirement(p).name} instead" for p in pins]
        error = result.stderr
        if not set(canonicalize_name(m) for m in _UNSATISFIED.findall(error)) - relaxed:
            break
    raise ConfigurationError(f"cannot install cibuildwheel {version} and its dependencies: {error.strip()[-600:]}")


def install_into(python: Path, version: str, work: Path) -> list[str]:
    """Install cibuildwheel `version` into `python`'s environment (the CI job's Python, or the cached venv);
    returns the notes of pins relaxed because the reachable index lacks them (never in CI)."""
    result = _pip(python, f"cibuildwheel=={version}")
    if result.returncode == 0:
        return []
    return _install_relaxing_unavailable(python, version, work, result.stderr)


def ensure_cibuildwheel(version: str, cache_dir: Path = CACHE_DIR) -> CibuildwheelEnv:
    """The venv of cibuildwheel `version`, made on first use (a PyPI download)."""
    venv = cache_dir / version
    marker = venv / MARKER
    if marker.is_file():
        data = json.loads(marker.read_text(encoding="utf-8"))
        return CibuildwheelEnv(version, venv, list(data.get("notes", [])))
    cache_dir.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=cache_dir))
    try:
        # venv paths are absolute inside the venv: make it at its final place, publish by the marker.
        if venv.exists():
            shutil.rmtree(venv)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        python = venv / "bin" / "python"
        notes = install_into(python, version, building)
        check = subprocess.run([str(python), "-c", "import cibuildwheel; print(cibuildwheel.__version__)"], capture_output=True, text=True)
        if check.returncode != 0 or check.stdout.strip() != version:
            raise ConfigurationError(f"cibuildwheel {version} installed into {venv} does not run: {check.stdout}{check.stderr}")
        marker.write_text(json.dumps({"version": version, "notes": notes}, indent=2), encoding="utf-8")
        return CibuildwheelEnv(version, venv, notes)
    except BaseException:
        shutil.rmtree(venv, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(building, ignore_errors=True)


DRIVER = Path(__file__).with_name("_cibw_driver.py")


@dataclass(frozen=True)
class Selection:
    """One job's selection: its environment and package folder (None: a stand-in without options)."""

    env: dict[str, str]
    package_dir: Path | None


def build_identifiers(cibw: CibuildwheelEnv, selections: list[Selection]) -> list[tuple[list[str] | None, str | None]]:
    """`cibuildwheel --print-build-identifiers --platform linux` for each selection, in one process.

    Returns (identifiers, None) per selection, or (None, cibuildwheel's error message).
    """
    if not selections:
        return []
    with tempfile.TemporaryDirectory(prefix="cibw-standin-") as standin:
        (Path(standin) / "pyproject.toml").write_text(STANDIN_PYPROJECT, encoding="utf-8")
        jobs = [{"env": {k: str(v) for k, v in s.env.items()}, "package_dir": str(s.package_dir or standin)} for s in selections]
        env = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
        result = subprocess.run([str(cibw.python), str(DRIVER)], input=json.dumps(jobs), capture_output=True, text=True, env=env, cwd=standin)
    if result.returncode != 0:
        raise ConfigurationError(f"cibuildwheel {cibw.version} could not be run from {cibw.venv}: {result.stderr.strip()[-600:]}")
    answers = []
    for item in json.loads(result.stdout):
        if item["code"] != 0:
            answers.append((None, (item["stderr"] or item["stdout"]).strip()[-600:] or f"exit {item['code']}"))
        else:
            answers.append(([line.strip() for line in item["stdout"].splitlines() if line.strip()], None))
    return answers
