"""The files `index` (and `serve --base-url`) rewrite in a mirror root from its build record: the
support list (SUPPORT.md, support.json) and the install script, whose default mirror is the URL the
copy is served from (the release's mirror URL when none is given)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from .. import hints
from ..wheels.record import BuildRecord
from ..errors import ConfigurationError
from ..matrix import Release
from ..render.docker import base_image_labels
from ..render.conda import render_conda
from ..render.install_script import render_install_script
from ..render.variants import arch_variants
from ..render.output import RenderedFile
from ..render.support import BuildHost
from ..render.support_list import render_support


# What the install script may embed in a double-quoted shell string: no quotes, `$`, backticks or spaces.
_URL_CHARACTERS = re.compile(r"[A-Za-z0-9._~:/%@+\-\[\]]+")


def checked_base_url(url: str) -> str:
    parts = urlsplit(url)
    if not _URL_CHARACTERS.fullmatch(url) or parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ConfigurationError(
            f"--base-url {url!r} is not an http(s) URL of the mirror root: pass e.g. http://127.0.0.1:8000 or https://mirror.example.com/perseus/2.0.0"
        )
    return url.rstrip("/")


def served_files(release: Release, record: BuildRecord, base_url: str | None) -> list[RenderedFile]:
    mirror_url = checked_base_url(base_url) if base_url is not None else None
    support = render_support(release.info, release.cells, record, base_image_labels(release.cells, BuildHost.detect()))
    paths = {c.key: c.path for c in record.cells}
    # the conda files of the built cells name the wheel file the build made (its proven platform tag)
    built = {c.key for c in record.built}
    conda = [render_conda(variants, python, paths) for variants in arch_variants(release.cells)
             if built & {v.key for v in variants} for python in variants[0].env_pythons]
    return [*support, *conda, render_install_script(release.info, release.cells, mirror_url, paths)]


def write_rendered(root: Path, rendered: RenderedFile) -> Path:
    target = root / rendered.path
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(rendered.data)
    os.chmod(tmp, 0o755 if rendered.executable else 0o644)
    tmp.replace(target)
    return target


def point_install_script(release: Release, root: Path, base_url: str) -> Path:
    """Rewrite an indexed mirror's install script to default to `base_url`, and its SHA256SUMS line."""
    from ..hashing import file_sha256
    from ..naming import CHECKSUMS_FILENAME

    import json

    from ..naming import MANIFEST_FILENAME

    manifest = root / MANIFEST_FILENAME
    paths = {c["key"]: c["path"] for c in json.loads(manifest.read_text())["cells"]} if manifest.is_file() else None
    rendered = render_install_script(release.info, release.cells, checked_base_url(base_url), paths)
    sums = root / CHECKSUMS_FILENAME
    if not sums.is_file():
        raise ConfigurationError(f"{root} is not an indexed mirror (no {CHECKSUMS_FILENAME}): run `{hints.index(root.name, root.parent)}` first")
    target = write_rendered(root, rendered)
    lines = [line for line in sums.read_text().splitlines() if not line.endswith(f"  {rendered.path}")]
    lines.append(f"{file_sha256(target)}  {rendered.path}")
    sums.write_text("\n".join(sorted(lines, key=lambda line: line.split("  ", 1)[1])) + "\n")
    return target
