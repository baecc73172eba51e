"""One cited CUDA-driver table (matrix/facts/cuda_drivers.yaml) behind the install script's and perseus doctor's:
both generated, both current, and a new CUDA version reaches both from one line of the facts file."""

from __future__ import annotations

import shutil

import pytest

from aiacc_build import cuda_drivers
from aiacc_build.errors import MatrixError


def test_the_generated_tables_are_current():
    assert cuda_drivers.stale() == [], "run `aiacc-build matrix driver-tables --write`"


def test_the_installer_and_doctor_read_the_same_facts():
    from aiacc_installer import detect
    from perseus import doctor

    facts = cuda_drivers.load()
    assert detect.DRIVER_FOR_CUDA == facts.toolkits
    assert detect.cuda_for_driver("450.36.06") == "11.0" and detect.cuda_for_driver("580.65.06") == "13.0"
    # doctor: a CUDA 11.x runtime runs on the 11 major's minor-compatibility driver, a 10.x one needs its own
    assert doctor._min_driver("11.8") == "450.80.02" and doctor._min_driver("10.1") == "418.39"


def test_a_new_cuda_version_is_one_line_of_facts(tmp_path):
    copy = tmp_path / "cuda_drivers.yaml"
    text = cuda_drivers.facts_path().read_text().replace('toolkits:\n', 'toolkits:\n  "14.0": "600.10.01"\n', 1)
    copy.write_text(text.replace('minor_version_compatibility:\n', 'minor_version_compatibility:\n  "14": "600.10.01"\n', 1))
    facts = cuda_drivers.load(copy)
    assert "('14.0', '600.10.01')" in cuda_drivers.render_installer(facts)
    assert "((14, 0), '600.10.01')" in cuda_drivers.render_doctor(facts)


def test_bad_facts_are_named(tmp_path):
    copy = tmp_path / "cuda_drivers.yaml"
    shutil.copy(cuda_drivers.facts_path(), copy)
    copy.write_text(copy.read_text().replace('"12.9": "575.51.03"', '"12.9": "soon"'))
    with pytest.raises(MatrixError, match="12.9: soon is not a CUDA version and a driver version"):
        cuda_drivers.load(copy)
