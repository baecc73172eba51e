"""Runs the installed `perseus doctor`, and builds perseus framework wheels with a chosen build manifest."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Optional

PERSEUS = str(Path(sys.executable).with_name("perseus"))
BASE_ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
RUNTIME_SOURCE = Path(__file__).resolve().parents[2] / "native" / "runtime"


def site_path(site: Path) -> str:
    """PYTHONPATH for a site dir holding perseus/<framework>/ files: the perseus package itself must still be
    perseus-common's (an editable install is found after PYTHONPATH's namespace portions, so name its source)."""
    return os.pathsep.join([str(RUNTIME_SOURCE), str(site)])


def doctor(*args: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run([PERSEUS, "doctor"] + list(args), env=dict(BASE_ENV, **(env or {})), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=600)


def install_framework_wheel(work: Path, version: str, manifest: dict, files: tuple = ()) -> Path:
    """pip-installs (into work/site) a perseus_torch distribution whose perseus/torch/build_manifest.json is
    `manifest` (and `files`, empty, beside it): an install of a wheel built for another environment, as doctor
    meets it on disk."""
    project = work / "project"
    (project / "perseus" / "torch").mkdir(parents=True)
    (project / "perseus" / "torch" / "build_manifest.json").write_text(json.dumps(manifest))
    for name in files:
        (project / "perseus" / "torch" / name).write_bytes(b"")
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "perseus_torch"
        version = "{}"
        [tool.setuptools]
        packages = ["perseus.torch"]
        [tool.setuptools.package-data]
        "perseus.torch" = {}
        """.format(version, json.dumps(["build_manifest.json", *files]))))
    site = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site),
                    str(project)], check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return site
