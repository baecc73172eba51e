"""Metadata-only conda package stubs (matrix/facts/conda/stand_in_stubs.yaml) written as local channels.

A stub is a real package archive holding info/index.json and an empty info/paths.json: conda and
py-rattler solve, download, verify and link it like any package, and the environment gets its
conda-meta record and no file. The stubs stand in for the CUDA / pytorch-channel packages of the
manual's old files, which no channel reachable here serves; each record cites the recipe it was
rendered from. `write_channels` puts them beside the machine's Pythons (checks/conda_channel.py).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ConfigurationError
from ..paths import REPO_ROOT
from .conda_channel import StandinPackage, write_channel, write_package, write_repodata

STUBS_PATH = REPO_ROOT / "matrix" / "facts" / "conda" / "stand_in_stubs.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StubSource(_Strict):
    url: str = Field(pattern=r"^https://")
    note: str


class StubRecord(_Strict):
    name: str
    version: str
    build: str
    build_number: int = Field(ge=0)
    subdir: Literal["linux-64", "noarch"]
    noarch: Literal["python"] | None = None
    depends: tuple[str, ...] = ()
    constrains: tuple[str, ...] = ()
    omitted: tuple[str, ...] = ()  # what the real record has from run_exports and the stub leaves out
    source: str
    also: tuple[str, ...] = ()  # further sources

    @model_validator(mode="after")
    def _noarch_matches_subdir(self) -> "StubRecord":
        if (self.subdir == "noarch") != (self.noarch is not None):
            raise ValueError(f"{self.name}: `noarch: python` goes with `subdir: noarch` and only there")
        return self

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}-{self.build}.tar.bz2"

    def index(self) -> dict:
        index = dict(name=self.name, version=self.version, build=self.build, build_number=self.build_number,
                     depends=list(self.depends), constrains=list(self.constrains), subdir=self.subdir,
                     license="metadata-only stand-in", timestamp=0)
        if self.noarch:
            index["noarch"] = self.noarch
        return index


class StubFacts(_Strict):
    sources: dict[str, StubSource]
    channels: dict[str, tuple[StubRecord, ...]]

    @model_validator(mode="after")
    def _sources_exist(self) -> "StubFacts":
        for channel, records in self.channels.items():
            seen: set[str] = set()
            for record in records:
                for key in (record.source, *record.also):
                    if key not in self.sources:
                        raise ValueError(f"{channel}/{record.name}: source {key!r} is not a key of `sources`")
                if record.filename in seen:
                    raise ValueError(f"{channel}: {record.filename} is listed twice")
                seen.add(record.filename)
        return self


@lru_cache(maxsize=4)
def load_stub_facts(path: Path = STUBS_PATH) -> StubFacts:
    try:
        return StubFacts.model_validate(yaml.safe_load(path.read_text()))
    except (OSError, yaml.YAMLError, ValidationError) as err:
        raise ConfigurationError(f"{path}: not a valid stub table ({err}); fix the file (its header says what a record holds)") from err


def stub_package(record: StubRecord, channel: Path) -> StandinPackage:
    """The record as a package under channel/<subdir>/: metadata, no files."""
    return write_package(channel, record.subdir, record.filename, record.index(), paths=[], files=[])


def write_channels(root: Path, pythons: list[Path], facts: StubFacts | None = None,
                   python_channel: str = "conda-forge") -> tuple[str, dict[str, list[StandinPackage]]]:
    """Every channel of the stub table under `root`, `python_channel` also with the machine's Pythons
    and pips (conda_channel.write_channel); returns the channel alias (file://) and each channel's packages."""
    facts = facts or load_stub_facts()
    written: dict[str, list[StandinPackage]] = {}
    for name in sorted({python_channel, *facts.channels}):
        stubs = tuple(stub_package(r, root / name) for r in facts.channels.get(name, ()))
        if name == python_channel:
            written[name] = write_channel(pythons, root, name, extra=stubs)[1]
        else:
            write_repodata(root / name, list(stubs))
            written[name] = list(stubs)
    return f"file://{root}/", written
