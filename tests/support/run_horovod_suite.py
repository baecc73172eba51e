"""Run one of Horovod's own parallel test files, unmodified, on N ranks under perseusrun against perseus.

    python tests/support/run_horovod_suite.py /path/to/horovod/test/parallel/test_torch.py [-np 2] [-k EXPR]
    .venv-mxnet/bin/python tests/support/run_horovod_suite.py .../test/parallel/test_mxnet1.py   # MXNet's Python

Every rank runs the same pytest with its own JUnit report; a test counts as passed only when it passed
on every rank, failed when it failed (or errored) on any rank, skipped when skipped on every rank.
Prints collected / passed / failed / skipped and the failures with each rank's first message line;
--json writes the table.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from support.ports import free_ports  # noqa: E402

SHIM = Path(__file__).resolve().parent / "horovod_shim"


def _outcomes(report: Path) -> Dict[str, Dict[str, str]]:
    found: Dict[str, Dict[str, str]] = {}
    for case in ET.parse(str(report)).getroot().iter("testcase"):
        name = case.get("name", "")
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            child = case.find(tag)
            if child is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                message = (child.get("message") or child.text or "").strip().splitlines()[0:1]
                message = message[0][:300] if message else ""
                break
        found[name] = {"outcome": outcome, "message": message}
    return found



def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test_file")
    parser.add_argument("-np", type=int, default=2)
    parser.add_argument("-k", default=None)
    parser.add_argument("--timeout", type=float, default=3000)
    parser.add_argument("--json", default=None)
    parser.add_argument("--log", default=None, help="write perseusrun's console output here")
    args = parser.parse_args(argv)
    test_file = Path(args.test_file).resolve()
    with tempfile.TemporaryDirectory(prefix="hvd-suite-") as tmp:
        env = dict(os.environ)
        paths = [str(SHIM), str(REPO / "native" / "runtime")] + [
            str(REPO / "native" / "bindings" / framework) for framework in ("torch", "mxnet")]
        # (TensorFlow: the installed perseus_tensorflow wheel; its package does not merge with the sources)
        env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["PERSEUS_CHANGE_HVD_ALLGATHER"] = env.get("PERSEUS_CHANGE_HVD_ALLGATHER", "1")
        # free ports unless the caller chose them: two suites at once must not both take the default 6666
        if "MASTER_PORT" not in env and "PERSEUS_MASTER_PORT" not in env:
            env["MASTER_PORT"], env["PERSEUS_MASTER_PORT"] = (str(p) for p in free_ports(2))
        pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN",
                      str(test_file), "--junitxml", os.path.join(tmp, "rank$RANK.xml")]
        if args.k:
            pytest_cmd += ["-k", args.k]
        # a rank whose tests failed must not end the job (perseusrun stops the others when one exits non-zero):
        # outcomes are read from each rank's report
        shell = " ".join("'{}'".format(a) if "$" not in a else '"{}"'.format(a) for a in pytest_cmd) + "; exit 0"
        command = [sys.executable, "-m", "perseus.run", "-np", str(args.np), "--", "sh", "-c", shell]
        proc = subprocess.run(command, env=env, cwd=str(test_file.parent), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=args.timeout)
        if args.log:
            Path(args.log).write_text(proc.stdout)
        reports = [Path(tmp) / "rank{}.xml".format(r) for r in range(args.np)]
        missing = [str(p) for p in reports if not p.exists()]
        if missing:
            print(proc.stdout[-5000:])
            print("no JUnit report from: {} (perseusrun rc {})".format(", ".join(missing), proc.returncode))
            return 2
        per_rank = [_outcomes(p) for p in reports]
    names = sorted(set().union(*per_rank))
    table = {}
    for name in names:
        seen = [ranks.get(name, {"outcome": "missing", "message": "not run on this rank"}) for ranks in per_rank]
        outcomes = {s["outcome"] for s in seen}
        if outcomes == {"passed"}:
            verdict = "passed"
        elif outcomes == {"skipped"}:
            verdict = "skipped"
        else:
            verdict = "failed"
        table[name] = {"verdict": verdict, "ranks": seen}
    counts = {v: sum(1 for t in table.values() if t["verdict"] == v) for v in ("passed", "failed", "skipped")}
    print("collected {}: passed {}, failed {}, skipped {} (perseusrun rc {})".format(
        len(table), counts["passed"], counts["failed"], counts["skipped"], proc.returncode))
    for name, t in table.items():
        if t["verdict"] == "failed":
            print("FAILED {}: {}".format(name, " | ".join("rank {} {} {}".format(r, s["outcome"], s["message"])
                                                           for r, s in enumerate(t["ranks"]))))
    for name, t in table.items():
        if t["verdict"] == "skipped":
            print("SKIPPED {}: {}".format(name, t["ranks"][0]["message"]))
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "tests": table}, indent=1))
    return 0 if counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
