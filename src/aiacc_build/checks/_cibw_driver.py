"""Run inside a cibuildwheel venv: `--print-build-identifiers` for many jobs in one process.

stdin: JSON list of {"env": {...}, "package_dir": "..."}; stdout: JSON list of {"code", "stdout",
"stderr"}, in order. Each job gets this process's environment without CIBW_* plus its own. Only the
standard library and cibuildwheel are imported (the venv has nothing else of ours).
"""

import contextlib
import io
import json
import os
import sys

from cibuildwheel.__main__ import main


def run(job, base):
    os.environ.clear()
    os.environ.update(base)
    os.environ.update(job["env"])
    sys.argv = ["cibuildwheel", "--print-build-identifiers", "--platform", "linux", job["package_dir"]]
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # an option cibuildwheel cannot parse: report it, go on with the next job
        code, err = 1, io.StringIO(f"{type(exc).__name__}: {exc}")
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


if __name__ == "__main__":
    jobs = json.load(sys.stdin)
    base = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    results = [run(job, base) for job in jobs]
    sys.__stdout__.write(json.dumps(results))
