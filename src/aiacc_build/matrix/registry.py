"""What `matrix sync` reads from the package registry: the Registry protocol, answered live by the
one registry client (aiacc_build.registry.RegistryClient, which can record its answers) or replayed
offline from a recording (RecordedRegistry: no network).
"""

from __future__ import annotations

import json
from email.parser import HeaderParser
from pathlib import Path
from typing import Protocol
from urllib.parse import urljoin

from ..errors import RegistryError
from ..registry import WheelFile, metadata_headers, normalize

__all__ = ["RecordedRegistry", "Registry", "WheelFile", "metadata_headers", "parse_metadata"]


class Registry(Protocol):
    def release_files(self, name: str, version: str) -> list[WheelFile]: ...

    def wheel_metadata(self, wheel: WheelFile) -> str: ...


class RecordedRegistry:
    """Replays a recording folder written by `RegistryClient(record_dir=...)` (`matrix sync --record`): no network."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        if not (self.folder / "pypi").is_dir():
            raise RegistryError(f"{self.folder} is not a registry recording (no pypi/ folder); record one with --record")

    def release_files(self, name: str, version: str) -> list[WheelFile]:
        path = self.folder / "pypi" / f"{normalize(name)}.json"
        if not path.is_file():
            raise RegistryError(f"the recording {self.folder} has no {path.name}; re-record with `matrix sync --record`")
        data = json.loads(path.read_text(encoding="utf-8"))
        if version not in data["releases"]:
            raise RegistryError(f"the recording {path} has no release {version}; re-record with `matrix sync --record`")
        return [WheelFile(f["filename"], urljoin(data["base_url"], f["url"])) for f in data["releases"][version] if not f.get("yanked")]

    def wheel_metadata(self, wheel: WheelFile) -> str:
        path = self.folder / "metadata" / f"{wheel.filename}.METADATA"
        if not path.is_file():
            raise RegistryError(f"the recording {self.folder} has no metadata of {wheel.filename}; re-record")
        return path.read_text(encoding="utf-8")


def parse_metadata(text: str) -> tuple[list[str], str | None]:
    """(Requires-Dist lines, Requires-Python) of a METADATA text."""
    msg = HeaderParser().parsestr(text)
    return list(msg.get_all("Requires-Dist") or []), msg.get("Requires-Python")
