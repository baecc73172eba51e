"""The Horovod collective surface a binding must give, row by row, and numpy's answer for each row on a 2-rank job.

A row is (framework, collective, variant, dtype, op, allgather mode). The collectives and variants come from the
binding's own public names (`allreduce_async_` is the in-place async allreduce, `grouped_allgather` the grouped
allgather, ...), so a collective function added to a binding's `__all__` adds rows; a row a conformance test does
not run is a row without a test (tests/test_coverage_table.py fails on it; docs/coverage.md lists them all).

Inputs are small integers (exact in every dtype, sums even so an average is exact); rank r holds `base(r)`.
"""

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

REPO = Path(__file__).resolve().parents[2]

COLLECTIVES = ("allreduce", "allgather", "broadcast", "reducescatter", "alltoall")
REDUCE_OPS = {"allreduce": ("Sum", "Average", "Min", "Max", "Product"), "reducescatter": ("Sum", "Average")}
ALLGATHER_MODES = ("concat", "stack")  # PERSEUS_CHANGE_HVD_ALLGATHER=1 / =0
SIZE = 2
ROOT = 1  # broadcast's root rank
SHAPE = (4, 3)


@dataclass(frozen=True)
class Row:
    framework: str
    collective: str
    variant: str  # sync, async, inplace, async_inplace, grouped, grouped_async, grouped_inplace, ...
    dtype: str
    op: str = ""  # allreduce / reducescatter only
    allgather: str = ""  # allgather only: concat or stack

    def key(self) -> str:
        return "-".join(p for p in (self.framework, self.collective, self.variant, self.dtype, self.op,
                                    self.allgather) if p)


def variant_of(name: str) -> Tuple[str, str]:
    """('allreduce', 'grouped_async_inplace') for 'grouped_allreduce_async_'; ('', '') for other names."""
    grouped = name.startswith("grouped_")
    rest = name[len("grouped_"):] if grouped else name
    inplace = rest.endswith("_")
    rest = rest.rstrip("_")
    asynchronous = rest.endswith("_async")
    rest = rest[: -len("_async")] if asynchronous else rest
    if rest not in COLLECTIVES:
        return "", ""
    parts = (["grouped"] if grouped else []) + (["async"] if asynchronous else []) + (["inplace"] if inplace else [])
    return rest, "_".join(parts) or "sync"


@dataclass(frozen=True)
class Binding:
    framework: str
    api_file: str  # the module whose literal __all__ lists the binding's public Horovod names (repo-relative)
    dtypes: Dict[str, Tuple[str, ...]]  # per collective: the dtypes it takes
    allgather_modes: Tuple[str, ...]
    test: str  # the conformance test module (repo-relative), one test per row: test_row[<row key>]

    def public_names(self) -> List[str]:
        """The module's __all__, read from its source (no import: the framework may live in another venv)."""
        tree = ast.parse((REPO / self.api_file).read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                return list(ast.literal_eval(node.value))
        raise ValueError("{} has no literal __all__".format(self.api_file))


_TORCH = ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64", "bool")
_TF_REDUCE = ("uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64")  # + bfloat16: ours
_TF_MOVE = _TF_REDUCE + ("uint16", "int16", "bool")
_MXNET = ("float16", "float32", "float64", "uint8", "int8", "int32", "int64")
_HOST_REDUCE = _MXNET  # perseus.horovod_kit.host_collectives: REDUCIBLE
_HOST_MOVE = _MXNET + ("bool",)  # MOVABLE
BINDINGS = {
    "torch": Binding("torch", "native/bindings/torch/perseus/torch/horovod/__init__.py",
                     {c: _TORCH for c in COLLECTIVES}, ALLGATHER_MODES, "tests/torch/test_hvd_conformance.py"),
    "tensorflow": Binding("tensorflow", "native/bindings/tensorflow/perseus/tensorflow/horovod/__init__.py",
                          {"allreduce": _TF_REDUCE, "reducescatter": _TF_REDUCE, "allgather": _TF_MOVE,
                           "broadcast": _TF_MOVE, "alltoall": _TF_MOVE}, ("concat",),
                          "tests/tensorflow/test_tf_conformance.py"),
    "mxnet": Binding("mxnet", "native/bindings/mxnet/perseus/mxnet/__init__.py", {c: _MXNET for c in COLLECTIVES},
                     ("concat",), "tests/mxnet/test_mxnet_conformance.py"),
    # the kit alone, under a binding that only converts (the identity): tests/support/numpy_binding
    "numpy": Binding("numpy", "tests/support/numpy_binding/__init__.py",
                     {"allreduce": _HOST_REDUCE, "reducescatter": _HOST_REDUCE, "allgather": _HOST_MOVE,
                      "broadcast": _HOST_MOVE, "alltoall": _HOST_MOVE}, ("concat",), "tests/kit/test_numpy_binding.py"),
}


def universe(binding: Binding) -> List[Row]:
    """Every row of a binding: its collective functions x the dtypes each takes x the reduce ops (no Average of
    bool) x its allgather modes."""
    rows = []
    for name in sorted(set(binding.public_names())):
        collective, variant = variant_of(name)
        if not collective:
            continue
        for dtype in binding.dtypes[collective]:
            for op in REDUCE_OPS.get(collective, ("",)):
                if op == "Average" and dtype == "bool":
                    continue
                for mode in (binding.allgather_modes if collective == "allgather" else ("",)):
                    rows.append(Row(binding.framework, collective, variant, dtype, op, mode))
    return rows


def base(rank: int, dtype: str) -> np.ndarray:
    """Rank `rank`'s input: values 1..3 plus 2 x rank (bool: a pattern that differs by rank)."""
    if dtype == "bool":
        return (np.arange(12).reshape(SHAPE) % (rank + 2)) == 0
    return (np.arange(12).reshape(SHAPE) % 3 + 1 + 2 * rank).astype(np.float64)


def expected(row: Row, rank: int) -> np.ndarray:
    """numpy's answer on `rank` (float64, or bool for bool rows)."""
    inputs = [base(r, row.dtype) for r in range(SIZE)]
    stacked = np.stack(inputs)
    if row.collective in ("allreduce", "reducescatter"):
        if row.dtype == "bool":
            reduced = {"Sum": np.any, "Max": np.any, "Min": np.all, "Product": np.all}[row.op](stacked, axis=0)
        else:
            reduced = {"Sum": np.sum, "Average": lambda s, axis: np.sum(s, axis=axis) / SIZE, "Min": np.min,
                       "Max": np.max, "Product": np.prod}[row.op](stacked, axis=0)
        if row.collective == "reducescatter":
            rows_each = SHAPE[0] // SIZE
            return reduced[rank * rows_each:(rank + 1) * rows_each]
        return reduced
    if row.collective == "allgather":
        return stacked if row.allgather == "stack" else np.concatenate(inputs)
    if row.collective == "broadcast":
        return inputs[ROOT]
    # alltoall, equal splits: this rank's chunk of every rank's rows, in rank order
    rows_each = SHAPE[0] // SIZE
    return np.concatenate([x[rank * rows_each:(rank + 1) * rows_each] for x in inputs])


def verdict(row: Row, rank: int, outputs: List[np.ndarray], dtype_name_of_outputs: List[str]) -> str:
    """"ok", or what differs from numpy's answer (each output: its values as numpy and its dtype's name)."""
    want = expected(row, rank)
    for got, dtype in zip(outputs, dtype_name_of_outputs):
        if dtype != row.dtype:
            return "dtype {} returned, {} expected".format(dtype, row.dtype)
        values = got.astype(np.float64) if row.dtype != "bool" else got.astype(bool)
        if values.shape != want.shape or not np.array_equal(values, want.astype(values.dtype)):
            return "got {} expected {}".format(values.tolist(), want.tolist())
    return "ok"


def run_rows(rows: List[Row], rank: int, run) -> Dict[str, str]:
    """Each row's verdict; `run(row)` returns (outputs as numpy, their dtype names); an exception is the verdict."""
    report = {}
    for row in rows:
        try:
            outputs, dtypes = run(row)
            report[row.key()] = verdict(row, rank, outputs, dtypes)
        except Exception as error:  # recorded: the test names the row
            report[row.key()] = "{}: {}".format(type(error).__name__, error)[:500]
    return report


def function_name(row: Row) -> str:
    """The binding function of a row: grouped_allreduce_async_ for (allreduce, grouped_async_inplace)."""
    parts = set(row.variant.split("_"))
    return "{}{}{}{}".format("grouped_" if "grouped" in parts else "", row.collective,
                             "_async" if "async" in parts else "", "_" if "inplace" in parts else "")


def call_kwargs(row: Row, hvd) -> Dict[str, object]:
    """The keyword arguments of a row's call: the reduce op, or broadcast's root rank."""
    if row.op:
        return {"op": getattr(hvd, row.op)}
    return {"root_rank": ROOT} if row.collective == "broadcast" else {}


def verdicts_by_row(reports) -> Dict[str, Dict[int, str]]:
    """Row key -> {rank: verdict} from the ranks' reports ({"rank": r, "rows": {key: verdict}} each)."""
    found: Dict[str, Dict[int, str]] = {}
    for report in reports:
        for key, verdict in report["rows"].items():
            found.setdefault(key, {})[report["rank"]] = verdict
    return found


def assert_row_passed(verdicts: Dict[str, Dict[int, str]], row: Row) -> None:
    got = verdicts.get(row.key())
    assert got is not None, "the job did not run row {}".format(row.key())
    assert got == {r: "ok" for r in range(SIZE)}, got


def call_row(row: Row, hvd, tensor, copy) -> list:
    """The row's outputs, its function called as its variant is called: grouped variants take `tensor` and
    `copy(tensor)`; async ones are synchronized; in-place ones give back their inputs; alltoall's (output, splits)
    gives the output."""
    parts = set(row.variant.split("_"))
    args = [tensor, copy(tensor)] if "grouped" in parts else tensor
    out = getattr(hvd, function_name(row))(args, **call_kwargs(row, hvd))
    if "async" in parts:
        out = hvd.synchronize(out)
    if "inplace" in parts:
        out = args  # the inputs hold the result
    if row.collective == "alltoall" and isinstance(out, tuple):
        out = out[0]
    return list(out) if "grouped" in parts else [out]
