"""An engine-honoured variable takes two hand edits: its declaration (perseus.config, with `engine=`) and the code
that uses it. Here a throwaway PERSEUS_THROWAWAY_KNOB is declared in a copy of perseus-common's source; from that
one edit the generated header gives the engine's options a field, a default, a parser with the declared range and
set/get by name (the engine's own options.cc, compiled against the regenerated table), doctor lists it and the
reference page has its row."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aiacc_build import variables
from engine_helpers import REPO_ROOT

pytestmark = pytest.mark.integration  # compiles and runs a program

ENGINE_SRC = REPO_ROOT / "native" / "engine" / "src"
ENGINE_INCLUDE = REPO_ROOT / "native" / "engine" / "include"
RUNTIME_PERSEUS = REPO_ROOT / "native" / "runtime" / "perseus"
NAME = "PERSEUS_THROWAWAY_KNOB"

DECLARATION = '''    throwaway_knob: int = variable(
        "PERSEUS_THROWAWAY_KNOB", 3, int_range(1, 9), "1-9", "a knob this test declares and the engine reads",
        since="2.0.0", honoured_by=ENGINE_READERS, engine="throwaway_knob")
'''

# The code that uses it: here, a program that reads the engine's options as the engine does and prints the field.
USER = r'''
#include <cstdio>
#include "errors.h"
#include "options.h"
int main() {
  perseus_engine_options o;
  perseus::engine::default_options(&o);
  try {
    perseus::engine::options_from_env(&o);
  } catch (const perseus::engine::EngineError& e) {
    std::printf("ERROR %s\n", e.what());
    return 3;
  }
  perseus::engine::set_option(&o, "wire_dtype", "1");  // the declared options before it are untouched
  std::printf("VALUE %d %s\n", o.throwaway_knob, perseus::engine::option_text(o, "PERSEUS_THROWAWAY_KNOB").c_str());
  return 0;
}
'''


@pytest.fixture(scope="module")
def declared(tmp_path_factory) -> Path:
    """A copy of perseus-common's source with the one declaration added; the generated header beside it."""
    root = tmp_path_factory.mktemp("throwaway")
    source = root / "site" / "perseus"
    shutil.copytree(RUNTIME_PERSEUS, source, ignore=shutil.ignore_patterns("__pycache__"))
    config = source / "config.py"
    text = config.read_text()
    anchor = "    explicit: FrozenSet[str] = field(default_factory=frozenset)"
    assert anchor in text
    config.write_text(text.replace(anchor, DECLARATION + anchor))
    header = root / "include" / "perseus" / "variables.h"
    header.parent.mkdir(parents=True)
    header.write_text(variables.render_c_header(source))
    return root


@pytest.fixture(scope="module")
def probe(declared: Path) -> Path:
    main = declared / "user.cc"
    main.write_text(USER)
    exe = declared / "probe"
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    done = subprocess.run([compiler, "-std=c++17", "-O0", "-I", str(declared / "include"), "-I", str(ENGINE_SRC),
                           "-I", str(ENGINE_INCLUDE), str(ENGINE_SRC / "options.cc"), str(main), "-o", str(exe)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    assert done.returncode == 0, done.stdout
    return exe


def run(exe: Path, value=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != NAME}
    if value is not None:
        env[NAME] = value
    return subprocess.run([str(exe)], env=env, stdout=subprocess.PIPE, universal_newlines=True, timeout=30)


def test_the_checkout_does_not_know_the_throwaway_variable():
    assert NAME not in (REPO_ROOT / "native" / "core" / "include" / "perseus" / "variables.h").read_text()


def test_the_engine_parses_it_with_its_declared_default_and_range(probe):
    assert run(probe).stdout.strip() == "VALUE 3 3"  # the declared default
    assert run(probe, "7").stdout.strip() == "VALUE 7 7"
    bad = run(probe, "12")
    assert bad.returncode == 3
    assert bad.stdout.strip() == "ERROR PERSEUS_THROWAWAY_KNOB='12' is not valid: it accepts an integer from 1 to 9"


def test_doctor_lists_it(declared):
    env = dict(os.environ, PYTHONPATH=str(declared / "site"), **{NAME: "7"})
    done = subprocess.run([sys.executable, "-m", "perseus.cli", "doctor", "--json"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    assert done.stdout.strip(), done.stderr
    settings = {row["name"]: row for row in json.loads(done.stdout)["settings"]}
    assert settings[NAME]["value"] == "7" and settings[NAME]["source"] == "environment"


def test_the_reference_page_has_its_row(declared):
    page = variables.render_reference_page(declared / "site" / "perseus")
    assert "| `{}` | `3` | 1-9 | a knob this test declares and the engine reads | 2.0.0 |".format(NAME) in page
