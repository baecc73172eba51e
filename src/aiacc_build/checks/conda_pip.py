"""Install the pip part of one rendered conda file, for real, the way `conda env create` does.

conda writes an environment's `pip:` lines into a requirements file and runs
`python -m pip install -U -r <file> --exists-action=b` in the new environment (conda 26.5.3 and 26.7.1:
conda/env/installers/pip.py, `_pip_install_via_requirements`). This does the same in a fresh venv of
the file's Python (a pyenv interpreter stands in for conda's Python), then imports the Perseus
packages. `mirror_to` replaces the release's mirror URL (the scheme + host + path prefix every
Perseus line starts with) in every pip line: that is how a locally served mirror
(`aiacc-build serve`) stands in for the published one; nothing else in the file changes.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigurationError
from .conda_env import EnvFile
from .conda_rules import MatchSpec


@dataclass
class PipInstallResult:
    file: str
    python: str
    interpreter: str
    venv: Path
    requirements: list[str]  # the pip lines as installed (mirror URL rewritten)
    rewritten: int  # how many lines named the mirror
    returncode: int
    pip_output: str
    imported: dict[str, str] = field(default_factory=dict)  # module -> its file, when the import worked
    import_error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.import_error

    def as_json(self) -> dict:
        return {
            "file": self.file,
            "ok": self.ok,
            "python": self.python,
            "interpreter": self.interpreter,
            "venv": str(self.venv),
            "requirements": self.requirements,
            "rewritten": self.rewritten,
            "pip_exit": self.returncode,
            "imported": self.imported,
            "import_error": self.import_error,
            "pip_output_tail": self.pip_output[-3000:],
            "seconds": round(self.seconds, 2),
        }


def rewrite_mirror(lines: tuple[str, ...] | list[str], mirror_from: str, mirror_to: str) -> tuple[list[str], int]:
    """Replace the `mirror_from/` prefix by `mirror_to/` wherever it occurs in a line."""
    old, new = mirror_from.rstrip("/") + "/", mirror_to.rstrip("/") + "/"
    out = [line.replace(old, new) for line in lines]
    return out, sum(1 for a, b in zip(lines, out) if a != b)


def env_python(env: EnvFile) -> str:
    for text in env.specs:
        spec = MatchSpec(text)
        if spec.name.normalized == "python" and spec.version:
            return spec.version.removesuffix(".*").lstrip("=")
    raise ConfigurationError(f"{env.path} pins no Python (`python=3.X`): cannot pick an interpreter")


def _interpreter(python: str) -> Path:
    from ..wheels.toolchain import find_interpreter

    found = find_interpreter(python)
    if found is None:
        raise ConfigurationError(f"no Python {python} interpreter here (pyenv): install one to check this file's pip part")
    return Path(found.executable)


def install_pip_section(
    env: EnvFile,
    venv_dir: Path,
    mirror_from: str,
    mirror_to: str | None = None,
    modules: tuple[str, ...] = ("perseus",),
    pip_args: tuple[str, ...] = (),
    prepared: bool = False,
    workdir: Path | None = None,
) -> PipInstallResult:
    """Fresh venv of the file's Python at `venv_dir`, `pip install -U -r` its pip lines, import `modules`.

    `prepared`: `venv_dir` is already an environment of that Python with pip (a venv a caller linked big
    files into from a cache, or a conda prefix); pip then installs whatever the lines still need.
    `workdir`: as conda does (`get_pip_workdir`), the requirements file is written into the env file's
    folder and pip runs there.
    """
    start = time.perf_counter()
    python = env_python(env)
    interpreter = _interpreter(python)
    lines, rewritten = rewrite_mirror(env.pip, mirror_from, mirror_to) if mirror_to else (list(env.pip), 0)
    venv_python = venv_dir / "bin" / "python"
    if prepared:
        if not venv_python.exists():
            raise ConfigurationError(f"{venv_dir} is not a virtual environment")
    else:
        if venv_dir.exists() and any(venv_dir.iterdir()):
            raise ConfigurationError(f"{venv_dir} is not empty: the check installs into a fresh environment")
        subprocess.run([str(interpreter), "-m", "venv", str(venv_dir)], check=True, capture_output=True)
    environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    with tempfile.NamedTemporaryFile("w", suffix=".requirements.txt", prefix="condaenv.", dir=workdir, delete=False) as handle:
        handle.write("".join(f"{line}\n" for line in lines))
        requirements = handle.name
    try:
        pip = subprocess.run(
            [str(venv_python), "-m", "pip", "install", "-U", *pip_args, "-r", requirements, "--exists-action=b"],
            capture_output=True,
            text=True,
            env=environ,
            cwd=workdir,
        )
    finally:
        os.unlink(requirements)
    result = PipInstallResult(
        file=env.path,
        python=python,
        interpreter=str(interpreter),
        venv=venv_dir,
        requirements=lines,
        rewritten=rewritten,
        returncode=pip.returncode,
        pip_output=pip.stdout + pip.stderr,
    )
    if pip.returncode == 0:
        code = "import importlib, sys\nfor m in sys.argv[1:]:\n    print(m, importlib.import_module(m).__file__)\n"
        # run outside the repository so that its sources cannot shadow the installed packages
        probe = subprocess.run([str(venv_python), "-c", code, *modules], capture_output=True, text=True, env=environ, cwd=str(venv_dir))
        if probe.returncode == 0:
            result.imported = dict(line.split(" ", 1) for line in probe.stdout.splitlines() if " " in line)
        else:
            result.import_error = (probe.stderr or probe.stdout).strip()[-2000:]
    result.seconds = time.perf_counter() - start
    return result
