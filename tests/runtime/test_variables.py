"""PERSEUS_* declared once: the config's fields are the declarations; the C header and the reference page
are generated from them; unknown names are reported by `import perseus`, perseusrun and doctor."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perseus import config, variable_names

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO = Path(__file__).resolve().parents[2]
RUNTIME = REPO / "native" / "runtime"
BASE_ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}


def test_each_variable_is_one_field_of_the_config():
    declared = [f.name for f in dataclasses.fields(config.PerseusConfig) if "variable" in f.metadata]
    assert [spec.field for spec in config.VARIABLES] == declared
    defaults = config.PerseusConfig()
    for spec in config.VARIABLES:
        assert getattr(defaults, spec.field) == spec.default
        assert spec.since and spec.effect and spec.allowed
    undeclared = [f.name for f in dataclasses.fields(config.PerseusConfig) if "variable" not in f.metadata]
    assert undeclared == ["explicit"]


def test_generated_header_and_page_are_current():
    sys.path.insert(0, str(REPO / "src"))
    try:
        from aiacc_build import variables
    finally:
        sys.path.remove(str(REPO / "src"))
    assert variables.stale() == [], "run `aiacc-build variables --write`"
    header = variables.C_HEADER.read_text()
    for spec in config.VARIABLES:
        assert '"{}"'.format(spec.name) in header
        assert "`{}`".format(spec.name) in variables.REFERENCE_PAGE.read_text()
    # the native core reads its variable through the header, not a literal of its own
    dispatch = (REPO / "native" / "core" / "src" / "cpu" / "dispatch.cpp").read_text()
    assert "std::getenv(PERSEUS_ENV_CPU_DISPATCH)" in dispatch and '"PERSEUS_CPU_DISPATCH"' not in dispatch


def test_unknown_names_get_did_you_mean_and_the_manuals_spelling_is_an_alias():
    env = {"PERSEUS_ALLREDUCE_DTPYE": "1", "PERSEUS_LAUNCHER": "perseusrun", "PERSEUS_TEST_OUT": "x"}
    assert variable_names.unknown_variables(env) == [("PERSEUS_ALLREDUCE_DTPYE", "PERSEUS_ALLREDUCE_DTYPE")]
    assert config.load({"PERSEUS_ALLREDUCE_NANHECK": "1"}).nancheck is True
    assert variable_names.alias_notes({"PERSEUS_ALLREDUCE_NANHECK": "1"}) == [
        "PERSEUS_ALLREDUCE_NANHECK is read as PERSEUS_ALLREDUCE_NANCHECK, its documented name"]
    assert config.load({"PERSEUS_ALLREDUCE_NANHECK": "1", "PERSEUS_ALLREDUCE_NANCHECK": "0"}).nancheck is False


def _run(argv, env):
    return subprocess.run(argv, env=dict(BASE_ENV, PYTHONPATH=str(RUNTIME), **env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)


def test_import_perseus_warns_about_a_misspelt_name():
    proc = _run([sys.executable, "-W", "always", "-c", "import perseus"], {"PERSEUS_ALLREDUCE_STREMS": "2"})
    assert proc.returncode == 0, proc.stderr
    assert "PERSEUS_ALLREDUCE_STREMS is set but perseus has no such variable" in proc.stderr
    assert "did you mean PERSEUS_ALLREDUCE_STREAMS?" in proc.stderr


def test_perseusrun_warns_about_a_misspelt_name():
    proc = _run([sys.executable, "-m", "perseus.run", "-np", "1", "--dry-run", "--", "true"], {"PERSEUS_GRADIENT_MOMENTOM": "0.5"})
    assert proc.returncode == 0, proc.stderr
    assert "perseusrun: warning: PERSEUS_GRADIENT_MOMENTOM is set but perseus has no such variable" in proc.stderr
    assert "did you mean PERSEUS_GRADIENT_MOMENTUM?" in proc.stderr


def test_doctor_shows_every_setting_and_fails_on_an_invalid_value():
    proc = _run([sys.executable, "-m", "perseus.cli", "doctor", "--json"],
                {"PERSEUS_ALLREDUCE_DTYPE": "7", "PERSEUS_ALLREDUCE_STREAMS": "2", "PERSEUS_OFFLIEN_NEG": "1"})
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    settings = {s["name"]: s for s in report["settings"]}
    assert set(settings) == config.VARIABLE_NAMES
    assert (settings["PERSEUS_ALLREDUCE_DTYPE"]["value"], settings["PERSEUS_ALLREDUCE_DTYPE"]["source"]) == ("7", "environment")
    assert settings["PERSEUS_ALLREDUCE_STREAMS"]["value"] == "2" and settings["GLOO_TIMEOUT_SECONDS"]["source"] == "default"
    errors = [p["what"] for p in report["problems"] if p["severity"] == "error"]
    assert "PERSEUS_ALLREDUCE_DTYPE='7' is not allowed: expected 0 (fp16 compression)" in errors[0]
    warnings = [(p["what"], p["fix"]) for p in report["problems"] if p["severity"] == "warning"]
    assert ("PERSEUS_OFFLIEN_NEG is set but perseus has no such variable, so it changes nothing",
            "rename it to PERSEUS_OFFLINE_NEG") in warnings
