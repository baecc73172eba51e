"""`matrix sync` offline from the committed recording: the committed registry facts must be its output."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aiacc_build.cli import main
from aiacc_build.errors import RegistryError
from aiacc_build.matrix import sync
from aiacc_build.matrix.registry import RecordedRegistry, metadata_headers
from aiacc_build.model import Arch
from aiacc_build.paths import MATRIX_DIR

FACTS = MATRIX_DIR / "facts"
RECORDINGS = MATRIX_DIR / "registry"


def test_committed_registry_facts_are_what_sync_writes():
    folder = sync.latest_recording(RECORDINGS)
    data = sync.compute(RecordedRegistry(folder), FACTS, recorded=str(folder.relative_to(MATRIX_DIR.parent)))
    assert sync.render(data) == (FACTS / "pypi.yaml").read_text(encoding="utf-8"), (
        "matrix/facts/pypi.yaml is stale: run `aiacc-build matrix sync --from latest --write`"
    )


def test_sync_check_cli_passes_on_committed_data(capsys):
    assert main(["matrix", "sync", "--from", "latest", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def _copy_facts(tmp_path: Path) -> Path:
    facts = tmp_path / "facts"
    shutil.copytree(FACTS, facts)
    return facts


def test_sync_check_exits_7_on_stale_data_and_changes_nothing(tmp_path, capsys):
    facts = _copy_facts(tmp_path)
    stale = (facts / "pypi.yaml").read_text().replace("requires_cuda: '13.2'", "requires_cuda: '13.1'", 1)
    (facts / "pypi.yaml").write_text(stale)
    rc = main(["matrix", "sync", "--from", "latest", "--check", "--facts-dir", str(facts)])
    out = capsys.readouterr()
    assert rc == 7
    assert "-          requires_cuda: '13.1'" in out.out and "+          requires_cuda: '13.2'" in out.out
    assert (facts / "pypi.yaml").read_text() == stale


def test_sync_write_repairs_stale_data(tmp_path):
    facts = _copy_facts(tmp_path)
    (facts / "pypi.yaml").write_text((facts / "pypi.yaml").read_text().replace("'3.12', ", "", 1))
    assert main(["matrix", "sync", "--from", "latest", "--write", "--facts-dir", str(facts)]) == 0
    assert (facts / "pypi.yaml").read_text() == (FACTS / "pypi.yaml").read_text()


def test_sync_sees_a_facts_change(tmp_path, capsys):
    """Adding a registry-backed build to the facts without re-recording is reported, not guessed."""
    facts = _copy_facts(tmp_path)
    text = (facts / "torch.yaml").read_text().replace(
        "requirement: torch==2.12.1\n", "requirement: torch==2.12.0\n", 1
    )
    (facts / "torch.yaml").write_text(text)
    assert main(["matrix", "sync", "--from", "latest", "--check", "--facts-dir", str(facts)]) == 5
    assert "has no release 2.12.0" in capsys.readouterr().err


def test_recording_is_required(tmp_path):
    with pytest.raises(RegistryError, match="not a registry recording"):
        RecordedRegistry(tmp_path)


@pytest.mark.parametrize(
    ("line", "arch", "extras", "cuda"),
    [
        ('cuda-toolkit[cublas,cudart]==13.0.3; platform_system == "Linux"', Arch.AARCH64, set(), "13.0"),
        ('nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"', Arch.X86_64, set(), "12.8"),
        ('nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"', Arch.AARCH64, set(), None),
        ('nvidia-cuda-runtime-cu12<13.0,>=12.5.82; extra == "and-cuda"', Arch.X86_64, {"and-cuda"}, "12.5"),
        ('nvidia-cuda-runtime-cu12<13.0,>=12.5.82; extra == "and-cuda"', Arch.X86_64, set(), None),
        ("numpy>=1.16", Arch.X86_64, set(), None),
    ],
)
def test_cuda_from_requires_dist(line, arch, extras, cuda):
    assert sync.cuda_from_requires([line], arch, "3.11", extras)[0] == cuda


def test_recorded_metadata_is_headers_only():
    folder = sync.latest_recording(RECORDINGS)
    for f in (folder / "metadata").glob("*.METADATA"):
        text = f.read_text()
        assert text.startswith("Metadata-Version:") and "\n\n" not in text
        assert metadata_headers(text) == text


@pytest.mark.optin("queries PyPI")
def test_live_registry_agrees_with_committed_facts(tmp_path):
    from aiacc_build.registry import RegistryClient

    data = sync.compute(RegistryClient(record_dir=tmp_path / "rec"), FACTS, recorded="live")
    committed = (FACTS / "pypi.yaml").read_text()
    fresh = sync.render(data)
    strip = lambda t: "\n".join(l for l in t.splitlines() if not l.startswith("recorded:"))  # noqa: E731
    assert strip(fresh) == strip(committed), "PyPI changed since the recording: run `aiacc-build matrix sync --record --write`"
