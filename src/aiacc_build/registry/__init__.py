"""The package registry: its one client (client.py) and the one HTTP range reader (ranges.py)."""

from .client import (
    DEFAULT_REGISTRY,
    REGISTRY_TIMEOUT_S,
    RegistryClient,
    RegistryFile,
    WheelFile,
    metadata_headers,
    normalize,
    page_links,
)
from .ranges import open_remote_zip

__all__ = [
    "DEFAULT_REGISTRY",
    "REGISTRY_TIMEOUT_S",
    "RegistryClient",
    "RegistryFile",
    "WheelFile",
    "metadata_headers",
    "normalize",
    "page_links",
    "open_remote_zip",
]
