"""The two-rank part shared by the framework benchmarks (tf_mwms_bench.py, mxnet_dist_sync_bench.py): the
synthetic data every variant trains on, and the runner: start one rank per namespace of the shared netns
harness (bench/netns.py), collect the JSON each prints on a `REPORT ` line, and summarise rounds of step
times into a median and a spread with the load they ran under. Python 3.6 compatible (rank side).
"""

import json
import os
import statistics
import subprocess
import sys
from typing import Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns import Link, tx_bytes  # noqa: E402,F401  (re-exported for the rank side)

REPORT = "REPORT "
FEATURES, CLASSES, EVAL_ROWS = 1024, 1000, 256  # ddp_bench.py's MLP: 1024-4096-2048-1000, 14.6 M parameters


def batches(rank: int, count: int, batch: int):
    """This rank's `count` batches: step s from seed 1000*s + rank, labelled by a fixed teacher."""
    import numpy as np

    teacher = np.random.default_rng(7).standard_normal((FEATURES, CLASSES)).astype("float32")
    xs = np.stack([np.random.default_rng(1000 * s + rank).standard_normal((batch, FEATURES)).astype("float32")
                   for s in range(count)])
    ys = (xs @ teacher).argmax(axis=2).astype("int64")
    eval_x = np.random.default_rng(999_999).standard_normal((EVAL_ROWS, FEATURES)).astype("float32")
    return xs, ys, eval_x, (eval_x @ teacher).argmax(axis=1).astype("int64")


def report(found: Dict[str, object]) -> None:
    """The rank side: one line the runner picks out of the rank's stdout."""
    print(REPORT + json.dumps(found), flush=True)


def run_pair(link: Link, argvs: Sequence[Sequence[str]], envs: Sequence[Dict[str, str]], timeout: float,
             what: str, extra: Optional[Sequence[subprocess.Popen]] = None) -> List[Dict[str, object]]:
    """Rank i runs argvs[i] with envs[i] in namespace i; returns their reports (rank order). `extra`
    processes (servers) are killed once the ranks are done."""
    procs = [subprocess.Popen(link.command(side, argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True) for side, (argv, env) in enumerate(zip(argvs, envs))]
    try:
        outputs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for proc in list(procs) + list(extra or []):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for proc, (out, err) in zip(procs, outputs):
        if proc.returncode != 0:
            raise SystemExit("{} failed (rc {}):\n{}\n{}".format(what, proc.returncode, out[-2000:], err[-6000:]))
    reports = []
    for out, err in outputs:
        lines = [line for line in out.splitlines() if line.startswith(REPORT)]
        if not lines:
            raise SystemExit("{}: a rank printed no report:\n{}".format(what, err[-4000:]))
        reports.append(json.loads(lines[-1][len(REPORT):]))
    return reports


class Rounds:
    """Per variant: every measured step of every round, each round's median, the load before each run."""

    def __init__(self) -> None:
        self.steps: Dict[str, List[float]] = {}
        self.round_medians: Dict[str, List[float]] = {}
        self.values: Dict[str, Dict[str, List[float]]] = {}
        self.load: List[float] = []

    def note_load(self) -> None:
        self.load.append(os.getloadavg()[0])

    def add_steps(self, variant: str, times: Sequence[float]) -> None:
        self.steps.setdefault(variant, []).extend(times)
        self.round_medians.setdefault(variant, []).append(statistics.median(times))

    def add(self, variant: str, key: str, value: float) -> None:
        self.values.setdefault(variant, {}).setdefault(key, []).append(value)

    def median(self, variant: str, key: str = "") -> float:
        return statistics.median(self.values[variant][key] if key else self.steps[variant])

    def spread(self, variant: str) -> str:
        meds = self.round_medians[variant]
        return "{:.3f}-{:.3f}".format(min(meds), max(meds))

    def load_words(self) -> str:
        return "load average (1 min) before each run: median {:.2f}, min {:.2f}, max {:.2f}".format(
            statistics.median(self.load), min(self.load), max(self.load))


def print_table(rounds: Rounds, variants: Sequence[str], compute_s: float, base: str) -> Dict[str, Dict[str, float]]:
    """Median step, spread of the round medians, wire alone, floor (compute + wire alone), step/floor, MB
    rank 0 sent per step, final loss, speed-up vs `base`. Returns the rows."""
    rows = {}
    for v in variants:
        wire = rounds.median(v, "wire_s")
        floor = compute_s + wire
        rows[v] = {"step_s": rounds.median(v), "wire_alone_s": wire, "floor_s": floor,
                   "step_over_floor": rounds.median(v) / floor, "mb_sent_per_step": rounds.median(v, "sent") / 1e6,
                   "wire_mb": rounds.median(v, "wire_sent") / 1e6, "loss": rounds.median(v, "loss")}
    print("{:<16} {:>9} {:>13} {:>9} {:>9} {:>10} {:>9} {:>11} {:>9} {:>9}".format(
        "variant", "step (s)", "round spread", "wire (s)", "floor (s)", "step/floor", "wire MB", "MB/step",
        "loss", "vs " + base[:6]))
    for v in variants:
        r = rows[v]
        print("{:<16} {:>9.3f} {:>13} {:>9.3f} {:>9.3f} {:>9.2f}x {:>9.1f} {:>11.1f} {:>9.4f} {:>8.2f}x".format(
            v, r["step_s"], rounds.spread(v), r["wire_alone_s"], r["floor_s"], r["step_over_floor"], r["wire_mb"],
            r["mb_sent_per_step"], r["loss"], rows[base]["step_s"] / r["step_s"]))
    return rows
