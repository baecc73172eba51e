"""A Horovod job's HOROVOD_* settings: honoured through their PERSEUS_* counterparts or named in a warning
(perseus/horovod_variables.py), at `import perseus`, in perseusrun and in `perseus doctor`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perseus import config, horovod_variables as hv

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO = Path(__file__).resolve().parents[2]
RUNTIME = REPO / "native" / "runtime"
BASE_ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}


def _run(argv, env):
    return subprocess.run(argv, env=dict(BASE_ENV, PYTHONPATH=str(RUNTIME), **env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)


def test_each_translated_variable_names_a_declared_perseus_variable():
    for v in hv.HOROVOD_VARIABLES:
        assert v.name.startswith("HOROVOD_") and v.meaning
        if v.treatment is hv.Treatment.TRANSLATED:
            assert v.perseus in config.VARIABLE_NAMES, v.name
        if v.treatment is hv.Treatment.NOT_HONOURED:
            assert v.why_not, v.name
    assert len(hv.BY_NAME) == len(hv.HOROVOD_VARIABLES), "a HOROVOD_* name is declared twice"


def test_honoured_settings_become_their_perseus_variables():
    env = {"HOROVOD_CYCLE_TIME": "3.5", "HOROVOD_GLOO_TIMEOUT_SECONDS": "45", "HOROVOD_FUSION_THRESHOLD": "0",
           "HOROVOD_NUM_NCCL_STREAMS": "2", "HOROVOD_HIERARCHICAL_ALLREDUCE": "1", "HOROVOD_RANK": "0"}
    readings = hv.translate(env)
    assert all(not r.warning for r in readings), readings
    loaded = config.load(env)
    assert (loaded.cycle_time_ms, loaded.gloo_timeout_seconds, loaded.fusion, loaded.streams) == (3.5, 45, 0, 2)
    assert loaded.mode == config.AllreduceMode.HIERARCHICAL


def test_a_perseus_setting_wins_and_the_disagreement_is_named():
    env = {"HOROVOD_CYCLE_TIME": "3.5", "PERSEUS_CYCLE_TIME_MS": "2"}
    (reading,) = hv.translate(env)
    assert env["PERSEUS_CYCLE_TIME_MS"] == "2"
    assert reading.warning == "HOROVOD_CYCLE_TIME=3.5 is ignored: PERSEUS_CYCLE_TIME_MS=2 is set too and wins"


def test_values_without_counterpart_are_warned_about_and_horovods_defaults_pass():
    env = {"HOROVOD_FUSION_THRESHOLD": "33554432", "HOROVOD_TIMELINE": "/tmp/tl.json", "HOROVOD_HIERARCHICAL_ALLREDUCE": "0",
           "HOROVOD_CPU_OPERATIONS": "gloo", "HOROVOD_FUSION_THRESHOLDS": "1"}
    warned = {r.name: r.warning for r in hv.translate(env)}
    assert "PERSEUS_ALLREDUCE_FUSION" not in env and "PERSEUS_ALLREDUCE_MODE" not in env
    assert warned["HOROVOD_FUSION_THRESHOLD"].startswith("HOROVOD_FUSION_THRESHOLD=33554432 is set but not honoured: "
                                                         "perseus fuses by granularity")
    assert warned["HOROVOD_TIMELINE"].startswith("HOROVOD_TIMELINE is set but not honoured: not supported")
    assert warned["HOROVOD_HIERARCHICAL_ALLREDUCE"] == "" and warned["HOROVOD_CPU_OPERATIONS"] == ""
    assert "perseus does not read it" in warned["HOROVOD_FUSION_THRESHOLDS"]
    assert hv.translate({"HOROVOD_FUSION_THRESHOLD": "67108864"})[0].warning == ""  # Horovod's default spelled out


def test_a_refused_value_is_an_error_naming_the_horovod_variable():
    with pytest.raises(config.ConfigError, match=r"HOROVOD_CYCLE_TIME='fast' \(read as PERSEUS_CYCLE_TIME_MS\) is not "
                                                 r"allowed: expected a number > 0"):
        hv.translate({"HOROVOD_CYCLE_TIME": "fast"})


def test_import_perseus_translates_and_warns_by_name():
    probe = ("import os, perseus; from perseus import config; c = config.get(); "
             "print(c.cycle_time_ms, os.environ['PERSEUS_CYCLE_TIME_MS'])")
    proc = _run([sys.executable, "-W", "always", "-c", probe], {"HOROVOD_CYCLE_TIME": "7", "HOROVOD_AUTOTUNE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["7.0", "7"]
    assert "HOROVOD_AUTOTUNE is set but not honoured: perseus tunes the number of concurrent streams" in proc.stderr


def test_perseusrun_refuses_a_bad_value_and_forwards_the_settings():
    proc = _run([sys.executable, "-m", "perseus.run", "-np", "1", "--dry-run", "--", "true"],
                {"HOROVOD_GLOO_TIMEOUT_SECONDS": "0"})
    assert proc.returncode == 2
    assert "HOROVOD_GLOO_TIMEOUT_SECONDS='0' (read as GLOO_TIMEOUT_SECONDS) is not allowed" in proc.stderr
    proc = _run([sys.executable, "-m", "perseus.run", "-np", "1", "--dry-run", "--", "true"],
                {"HOROVOD_STALL_CHECK_TIME_SECONDS": "60"})
    assert proc.returncode == 0, proc.stderr
    assert "perseusrun: warning: HOROVOD_STALL_CHECK_TIME_SECONDS is set but not honoured: perseus has no stall " \
           "inspector" in proc.stderr
    from perseus.run import environment
    assert environment.forwarded({"HOROVOD_CYCLE_TIME": "3", "HOROVOD_RANK": "1"}) == {"HOROVOD_CYCLE_TIME": "3"}


def test_doctor_shows_where_a_setting_came_from():
    proc = _run([sys.executable, "-m", "perseus.cli", "doctor", "--json"],
                {"HOROVOD_CYCLE_TIME": "4", "HOROVOD_TIMELINE": "/tmp/x.json"})
    report = json.loads(proc.stdout)
    settings = {s["name"]: s for s in report["settings"]}
    assert (settings["PERSEUS_CYCLE_TIME_MS"]["value"], settings["PERSEUS_CYCLE_TIME_MS"]["source"]) == \
        ("4.0", "environment (HOROVOD_CYCLE_TIME)")
    warnings = [p["what"] for p in report["problems"] if p["severity"] == "warning"]
    assert any(w.startswith("HOROVOD_TIMELINE is set but not honoured") for w in warnings), warnings
