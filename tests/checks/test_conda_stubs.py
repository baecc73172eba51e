"""matrix/facts/conda/stand_in_stubs.yaml: loads, cites a source for every record, agrees with the channel
table, and a broken table is refused naming the file. The stubs installed by py-rattler:
test_conda_stand_in_install.py; by real conda: bench/conda_real_install.sh."""

from __future__ import annotations

import json
import tarfile

import pytest

from aiacc_build.checks.conda_stubs import STUBS_PATH, load_stub_facts, stub_package
from aiacc_build.errors import ConfigurationError


def test_every_record_cites_a_source_with_a_url():
    facts = load_stub_facts()
    assert all(s.url.startswith("https://") for s in facts.sources.values())
    for records in facts.channels.values():
        for record in records:
            assert {record.source, *record.also} <= set(facts.sources), record.name


def test_the_stubs_are_what_the_manuals_torch_1_7_1_file_needs_and_agree_with_the_channel_table(table):
    facts = load_stub_facts()
    (pytorch,) = facts.channels["pytorch"]
    assert (pytorch.name, pytorch.version) == ("pytorch", "1.7.1")
    assert "cudatoolkit >=11.0,<11.1" in pytorch.depends and "python >=3.6,<3.7.0a0" in pytorch.depends
    # the channel table says the same build exists there
    assert table.pytorch_channel("1.7.1", "11.0", "3.6") == "pytorch"
    toolkit = next(r for r in facts.channels["conda-forge"] if r.name == "cudatoolkit")
    assert toolkit.version.startswith("11.0.") and "11.0" in table.channels["conda-forge"].packages["cudatoolkit"].versions
    # every package pytorch depends on has a stub (python and the rest of the closure aside: see the file's header)
    names = {r.name for records in facts.channels.values() for r in records}
    assert {d.split()[0] for d in pytorch.depends} - {"python"} <= names


def test_a_stub_package_holds_metadata_and_no_files(tmp_path):
    record = load_stub_facts().channels["pytorch"][0]
    package = stub_package(record, tmp_path / "pytorch")
    with tarfile.open(tmp_path / "pytorch" / package.subdir / package.filename) as tar:
        assert sorted(tar.getnames()) == ["info/index.json", "info/paths.json"]
        assert json.load(tar.extractfile("info/paths.json"))["paths"] == []
        assert json.load(tar.extractfile("info/index.json"))["depends"] == list(record.depends)
    assert package.record["sha256"] and package.record["size"] > 0


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda t: t.replace("source: conda-forge-ninja-1.10.2", "source: nowhere"), "'nowhere' is not a key of `sources`"),
        (lambda t: t.replace("      version: 1.10.2", "      version: [1, 10]"), "version"),
        (lambda t: t.replace("      noarch: python\n      depends: [\"python >=3.5\"]", "      depends: [\"python >=3.5\"]"), "noarch"),
    ],
)
def test_a_broken_stub_table_is_refused_naming_the_file_and_the_problem(tmp_path, change, words):
    broken = tmp_path / "stand_in_stubs.yaml"
    text = STUBS_PATH.read_text()
    broken.write_text(change(text))
    assert broken.read_text() != text
    with pytest.raises(ConfigurationError) as err:
        load_stub_facts(broken)
    assert str(broken) in str(err.value) and words in str(err.value)
