"""SHA256SUMS: one `<sha256>  <path>` line per published file, checkable with `sha256sum -c`."""

from __future__ import annotations

from pathlib import Path

from ..hashing import file_sha256
from ..naming import CHECKSUMS_FILENAME, SIMPLE_INDEX_DIR


def published_files(root: Path, excluded: set[str]) -> list[str]:
    """Every file under the mirror root except the index pages, SHA256SUMS itself and `excluded` paths."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or rel == CHECKSUMS_FILENAME or rel in excluded:
            continue
        if SIMPLE_INDEX_DIR in rel.split("/")[:-1]:
            continue
        out.append(rel)
    return out


def write_checksums(root: Path, paths: list[str], known: dict[str, str]) -> Path:
    """Write SHA256SUMS for `paths`; digests in `known` are used as they are (they were verified)."""
    lines = [f"{known.get(p) or file_sha256(root / p)}  {p}" for p in sorted(paths)]
    target = root / CHECKSUMS_FILENAME
    target.write_text("\n".join(lines) + "\n")
    return target
