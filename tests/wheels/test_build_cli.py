"""`aiacc-build build --plan-only`, `--cells` selectors, and the errors of build / index / serve."""

from __future__ import annotations

import json

import pytest

from aiacc_build.wheels.select import select
from aiacc_build.cli import main
from aiacc_build.errors import ConfigurationError, UnsupportedCellError
from aiacc_build.matrix import load_release

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, " ".join(err.split())  # rich wraps long messages at the terminal width


def test_plan_only_json_counts_every_cell(capsys, tmp_path):
    code, out, _ = _run(
        capsys,
        "build",
        "--release",
        "2.0.0",
        "--plan-only",
        "--json",
        "--offline",
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert code == 0
    plan = json.loads(out)
    assert plan["summary"]["cells"] == len(load_release("2.0.0").cells)
    assert plan["summary"]["build"] + plan["summary"]["deferred"] == plan["summary"]["cells"]
    building = [c["key"] for c in plan["cells"] if c["status"] == "build"]
    assert building == ["2.0.0/torch-2.13.0/cpu/py3.11/x86_64"]
    by_key = {c["key"]: c for c in plan["cells"]}
    assert by_key["2.0.0/torch-2.13.0/cpu/py3.11/x86_64"]["download_size"] == 0
    arm = [c for c in plan["cells"] if c["key"].endswith("/aarch64") and "/torch-" in c["key"]]
    assert arm and all(c["reason"] == "needs an aarch64 builder (this machine is x86_64)" for c in arm)
    assert not (tmp_path / "dist").exists()


def test_cells_selector_widens_and_replaces_the_default(capsys, tmp_path):
    code, out, _ = _run(
        capsys,
        "build",
        "--release",
        "2.0.0",
        "--plan-only",
        "--json",
        "--offline",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--cells",
        "framework=torch,cuda=13.0,python=3.12",
    )
    assert code == 0
    cells = json.loads(out)["cells"]
    local = next(c for c in cells if c["key"] == "2.0.0/torch-2.13.0/cpu/py3.11/x86_64")
    assert local["status"] == "deferred" and local["reason"] == "not selected"
    picked = [c for c in cells if "/cuda13.0/py3.12/" in c["key"] and c["key"].startswith("2.0.0/torch")]
    assert picked and all(c["status"] == "deferred" for c in picked)  # offline: their frameworks are unknown
    assert all("offline" in c["reason"] or "nvcc" in c["reason"] or "builder" in c["reason"] for c in picked)


def test_selectors():
    cells = load_release("2.0.0").cells
    assert select(cells, ["torch-2.13.0/cpu/py3.11/x86_64"]) == {"2.0.0/torch-2.13.0/cpu/py3.11/x86_64"}
    assert select(cells, ["2.0.0/torch-2.13.0/cpu/py3.1*/x86_64"]) == {
        f"2.0.0/torch-2.13.0/cpu/py3.{m}/x86_64" for m in (10, 11, 12, 13)
    }
    assert select(cells, ["all"]) == {c.key for c in cells}
    both = select(cells, ["framework=mxnet", "torch-2.13.0/cpu/py3.11/x86_64"])
    assert "2.0.0/torch-2.13.0/cpu/py3.11/x86_64" in both and any("mxnet" in k for k in both)
    with pytest.raises(UnsupportedCellError, match="nearest: .*torch-2.13.0/cpu/py3.11/x86_64"):
        select(cells, ["torch-2.13.0/cpu/py3.11/x86"])
    with pytest.raises(ConfigurationError, match="field=value"):
        select(cells, ["colour=blue"])


def test_unmatched_selector_exits_4(capsys):
    code, _, err = _run(capsys, "build", "--release", "2.0.0", "--plan-only", "--offline", "--cells", "torch-9.9.9/*")
    assert code == 4 and "matches no cell" in err


def test_unknown_release_exits_4(capsys):
    code, _, err = _run(capsys, "build", "--release", "9.9.9", "--plan-only")
    assert code == 4 and "known releases" in err


def test_index_and_serve_without_a_build_say_what_to_run(capsys, tmp_path):
    code, _, err = _run(capsys, "index", "--release", "2.0.0", "--dist", str(tmp_path))
    assert code == 2 and "aiacc-build build --release 2.0.0" in err
    code, _, err = _run(capsys, "serve", "--release", "2.0.0", "--dist", str(tmp_path))
    assert code == 2 and "aiacc-build index" in err


def test_the_plan_is_a_summary_unless_verbose(capsys, tmp_path):
    args = ("build", "--release", "2.0.0", "--plan-only", "--offline", "--cache-dir", str(tmp_path / "cache"))
    code = main(list(args))
    summary = capsys.readouterr().err
    assert code == 0
    cells = len(load_release("2.0.0").cells)
    assert len(summary.splitlines()) <= 6  # counts, one line per cell to build, where the full table is
    assert f"release 2.0.0: {cells} cells: 1 to build here, {cells - 1} deferred" in " ".join(summary.split())
    assert "build torch-2.13.0/cpu/py3.11/x86_64: framework torch-2.13.0+cpu" in " ".join(summary.split())
    assert main([*args, "--verbose"]) == 0
    table = capsys.readouterr().err
    assert len(table.splitlines()) > cells  # every cell, with its reason
