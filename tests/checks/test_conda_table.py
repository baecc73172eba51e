"""matrix/facts/conda/packages.yaml: loads, cites a source for every entry, and answers the renderer's question."""

from __future__ import annotations

import pytest

from aiacc_build.conda_table import load_conda_table, table_path
from aiacc_build.errors import MatrixError


def test_every_entry_cites_a_source_with_a_url(table):
    assert table.sources, "the table must say where its facts come from"
    for name, source in table.sources.items():
        assert source.url.startswith("https://"), name
    cited = {p.source for ch in table.channels.values() for p in ch.packages.values()}
    cited |= {b.source for ch in table.channels.values() for p in ch.packages.values() for b in p.builds}
    assert cited <= set(table.sources)


@pytest.mark.parametrize(
    "version, cuda, python, channel",
    [
        ("1.7.1", "11.0", "3.6", "pytorch"),
        ("1.7.1", "11.0", "3.9", "pytorch"),
        ("1.8.2", "10.2", "3.8", "pytorch-lts"),
        ("1.8.2", "10.2", "3.9", None),  # LTS conda builds stop at Python 3.8
        ("1.4.0", "10.1", "3.7", None),  # removed from the pytorch channel
        ("2.5.1", "12.4", "3.12", "pytorch"),
        ("2.5.1", None, "3.9", "pytorch"),
        ("2.6.0", None, "3.11", None),  # the pytorch channel stopped after 2.5
        ("2.13.0", "13.0", "3.11", None),
    ],
)
def test_pytorch_channel_for_an_exact_build(table, version, cuda, python, channel):
    assert table.pytorch_channel(version, cuda, python) == channel


def test_pytorch_cuda_era_starts_at_113(table):
    assert not table.pytorch_cuda_era("1.12.1") and table.pytorch_cuda_era("1.13.0") and table.pytorch_cuda_era("2.5.1")


def test_a_broken_table_names_file_and_line(tmp_path):
    text = table_path().read_text(encoding="utf-8").replace("source: conda-forge-cudatoolkit", "source: nowhere", 1)
    bad = tmp_path / "packages.yaml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(MatrixError) as err:
        load_conda_table(bad)
    assert f"{bad}:" in str(err.value) and "nowhere" in str(err.value)
    bad.write_text(table_path().read_text(encoding="utf-8").replace("any_version: true", "anyversion: true", 1), encoding="utf-8")
    with pytest.raises(MatrixError) as err:
        load_conda_table(bad)
    assert "anyversion" in str(err.value)
