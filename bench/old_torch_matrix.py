"""Opt-in: the manual's torch versions, for real (not CI: ~700 MB of torch per version, minutes each).

    AIACC_OPTIN=1 .venv/bin/python bench/old_torch_matrix.py [--work DIR] [--only 1.9.0 ...] [--wheels DIR]

Per version: a fresh venv on the Python that torch file exists for, torch from the registry (or --wheels, a
folder of downloaded files; default .cache/old-torch-wheels when it exists), perseus-common and the perseus_torch
binding built from this checkout (CPU, the torch's own C++ ABI) with the engine module linked statically against
Gloo from recipes/gloo (built once, as dev/lib.sh's gloo_recipe does; compiles go through ccache when it is
installed, so the engine is compiled once for all cells). Then: the binding imported and one op run; a 2-rank Horovod API job
(broadcast_parameters, broadcast_optimizer_state, broadcast_object, allgather_object; these venvs hold no
numpy where the torch does not require it); DDP with `import perseus` against plain DDP on the same data (where the torch has comm hooks:
parameters equal within fp16 tolerance) or, before torch 1.8, the warning that points to the Horovod API.
Prints a Markdown table; exits non-zero when a check failed. Each cell's venv (~2 GB) is removed after it
unless --keep-venvs; the cells run one after another.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests" / "runtime"))
from perseus_harness import launch  # noqa: E402  (the test harness: ranks started as torchrun would)

VERSIONS = [("1.2.0", "3.7"), ("1.3.0", "3.7"), ("1.4.0", "3.8"), ("1.5.1", "3.8"), ("1.6.0", "3.8"),
            ("1.7.1", "3.8"), ("1.8.0", "3.8"), ("1.9.0", "3.8"), ("1.10.0", "3.8")]
# torch 1.4 imports numpy's C API at start-up and fails on the numpy pip picks for Python 3.8 (seen here)
EXTRA_REQUIREMENTS = {"1.4.0": ["numpy<1.19"]}
FP16_TOLERANCE = 1e-2
OP_CHECK = ("from perseus.torch import _kernels; import torch; "
            "print(_kernels.plan_buckets([4 << 20, 4 << 20, 64], None), _kernels.ops().core_version())")


@dataclass
class Row:
    torch: str
    python: str
    binding: str = "-"
    horovod: str = "-"
    ddp: str = "-"
    notes: List[str] = field(default_factory=list)

    def failed(self) -> bool:
        return any(cell.startswith("FAIL") for cell in (self.binding, self.horovod, self.ddp))


def gloo_prefix() -> str:
    """The Gloo the engine links statically: recipes/gloo/build.sh (cached in .cache/gloo after the first build)."""
    prefix_file = REPO_ROOT / ".cache" / "gloo" / "prefix"
    prefix_file.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["bash", str(REPO_ROOT / "recipes" / "gloo" / "build.sh"), str(prefix_file)], check=True,
                   stdout=subprocess.DEVNULL)
    return prefix_file.read_text().strip()


def build_env() -> dict:
    env = {"CMAKE_BUILD_PARALLEL_LEVEL": "2"}
    if shutil.which("ccache"):
        env["CMAKE_CXX_COMPILER_LAUNCHER"] = "ccache"
    return env


def run(argv: List[str], log: Path, timeout: float = 1800, env: Optional[dict] = None) -> bool:
    with open(log, "a") as out:
        out.write("$ {}\n".format(" ".join(argv)))
        out.flush()
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                              env=dict(os.environ, **(env or {})))
    return done.returncode == 0


def interpreter(minor: str) -> str:
    found = sorted(glob.glob("/root/.pyenv/versions/{}.*/bin/python{}".format(minor, minor)))
    if not found:
        raise SystemExit("no Python {} under /root/.pyenv/versions".format(minor))
    return found[-1]


def tail(log: Path, lines: int = 3) -> str:
    text = [line for line in log.read_text().splitlines() if line.strip() and "WARNING: Location" not in line]
    return " / ".join(text[-lines:])[-300:]


def check(version: str, minor: str, work: Path, wheels: Optional[Path], gloo: str) -> Row:
    row = Row(version, minor)
    home = work / version
    venv, log = home / "venv", home / "log.txt"
    home.mkdir(parents=True, exist_ok=True)
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q"]
    if not (venv / "bin" / "python").exists():
        run([interpreter(minor), "-m", "venv", str(venv)], log)
        run(pip + ["-U", "pip"], log)
    source = ["--find-links", str(wheels)] if wheels else []
    requirements = ["torch=={}".format(version)] + EXTRA_REQUIREMENTS.get(version, [])
    if not run(pip + source + requirements + ["wheel", "setuptools", "scikit-build-core", "ninja", "cmake"], log):
        row.binding = "FAIL: torch {} did not install ({})".format(version, tail(log))
        return row
    started = time.monotonic()
    built = (run(pip + ["--no-build-isolation", str(REPO_ROOT / "native" / "runtime")], log) and
             run(pip + ["--no-deps", "--no-build-isolation", "-C", "build-dir={}".format(home / "build"),
                        "-C", "cmake.define.PERSEUS_WITH_CUDA=OFF", "-C", "cmake.define.PERSEUS_GLOO_PREFIX=" + gloo,
                        str(REPO_ROOT / "native" / "bindings" / "torch")], log, env=build_env()))
    if not built:
        row.binding = "FAIL: build ({})".format(tail(log))
        return row
    if not run([python, "-c", OP_CHECK], log):
        row.binding = "FAIL: import ({})".format(tail(log))
        return row
    row.binding = "compiled + imported ({:.0f} s)".format(time.monotonic() - started)
    try:
        ranks = [r.output for r in launch("hvd_objects.py", 2, python=python, env={"PERSEUS_MASTER_PORT": None},
                                          timeout=300)]
        same = ranks[0]["weight_sum"] == ranks[1]["weight_sum"] and ranks[0]["momentum"] == ranks[1]["momentum"]
        numpy = "numpy installed (this torch requires it)" if ranks[0]["numpy_importable"] else "no numpy"
        row.horovod = "ok (2 ranks, {})".format(numpy) if same else "FAIL: {}".format(ranks)
    except AssertionError as error:
        row.horovod = "FAIL: {}".format(str(error)[-300:])
    row.ddp = compare_ddp(python)
    return row


def compare_ddp(python: str) -> str:
    try:
        plain = [r.output for r in launch("old_torch_ddp.py", 2, ["plain"], python=python,
                                          env={"PERSEUS_MASTER_PORT": None}, timeout=300)]
        accelerated = [r.output for r in launch("old_torch_ddp.py", 2, ["perseus"], python=python,
                                                env={"PERSEUS_MASTER_PORT": None}, timeout=300)]
    except AssertionError as error:
        return "FAIL: {}".format(str(error)[-300:])
    if not accelerated[0]["perseus_state"]:
        warned = any("has no DistributedDataParallel.register_comm_hook" in w for w in accelerated[0]["warnings"])
        return "no comm hooks: warns, points to hvd" if warned else "FAIL: no hook and no warning"
    difference = max(abs(a - b) for p, q in zip(plain[0]["params"], accelerated[0]["params"]) for a, b in zip(p, q))
    verdict = "ok" if difference <= FP16_TOLERANCE else "FAIL"
    return "{}: perseus hook, max abs(perseus - plain) = {:.1e}; ACCUMULATE_N_STEPS=2: {}".format(
        verdict, difference, accumulate(python))


def accumulate(python: str) -> str:
    """PERSEUS_ACCUMULATE_N_STEPS under DDP: applied (torch >= 2.0) or refused with the reason."""
    ranks = launch("old_torch_ddp.py", 2, ["perseus"], python=python, check=False, timeout=300,
                   env={"PERSEUS_MASTER_PORT": None, "PERSEUS_ACCUMULATE_N_STEPS": "2"})
    if all(r.returncode == 0 for r in ranks):
        return "applied"
    refused = all("PERSEUS_ACCUMULATE_N_STEPS=2 cannot work under DistributedDataParallel" in r.stderr for r in ranks)
    return "refused, naming torch 2.0's optimizer hooks" if refused else "FAIL: " + ranks[0].stderr[-300:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/perseus-old-torch"))
    parser.add_argument("--wheels", type=Path, help="a folder of downloaded torch files (pip --find-links)")
    parser.add_argument("--only", nargs="*", help="torch versions to check (default: all)")
    parser.add_argument("--keep-venvs", action="store_true", help="keep each cell's venv (~2 GB each)")
    args = parser.parse_args()
    if os.environ.get("AIACC_OPTIN") != "1":
        parser.error("opt-in: set AIACC_OPTIN=1 (downloads ~700 MB of torch per version)")
    cached = REPO_ROOT / ".cache" / "old-torch-wheels"
    wheels = args.wheels or (cached if cached.is_dir() else None)
    gloo = gloo_prefix()
    chosen = [(v, p) for v, p in VERSIONS if not args.only or v in args.only]
    rows = []
    for version, minor in chosen:
        row = check(version, minor, args.work, wheels, gloo)
        rows.append(row)
        if not args.keep_venvs:
            shutil.rmtree(str(args.work / version / "venv"), ignore_errors=True)
            shutil.rmtree(str(args.work / version / "build"), ignore_errors=True)
        print("torch {}: binding {} | horovod {} | ddp {}".format(row.torch, row.binding, row.horovod, row.ddp),
              flush=True)
    print("\n| torch | Python | binding (CPU) | 2-rank Horovod API | DDP with `import perseus` |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| {} | {} | {} | {} | {} |".format(row.torch, row.python, row.binding, row.horovod, row.ddp))
    return 1 if any(row.failed() for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
