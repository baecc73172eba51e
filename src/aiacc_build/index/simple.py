"""PEP 503 simple index pages (with PEP 629 version meta and `#sha256=` fragments).

Links are relative, so the mirror root can be copied anywhere; `+` in a file name is written `%2B`
in the link, as the seed's URLs do, and shown verbatim in the anchor text.
"""

from __future__ import annotations

import html
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..naming import simple_index_dir, simple_index_page, simple_project_name, url_path

REPOSITORY_VERSION = "1.0"


@dataclass(frozen=True)
class IndexedFile:
    project: str  # distribution name, any spelling: normalised here
    path: str  # path of the file from the mirror root: "cpu/perseus_torch-...whl"
    sha256: str
    requires_python: str | None = None


def _page(title: str, anchors: Iterable[str]) -> str:
    body = "\n".join(f"    {a}<br/>" for a in anchors)
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        f'    <meta name="pypi:repository-version" content="{REPOSITORY_VERSION}">\n'
        f"    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n"
        f"    <h1>{html.escape(title)}</h1>\n{body}\n  </body>\n</html>\n"
    )


def project_page(folder: str | None, project: str, files: list[IndexedFile]) -> tuple[str, str]:
    """(path of the page from the mirror root, its HTML) for one project of one index."""
    page = simple_index_page(folder, project)
    page_dir = posixpath.dirname(page)
    anchors = []
    for f in sorted(files, key=lambda f: f.path):
        href = url_path(posixpath.relpath(f.path, page_dir)) + f"#sha256={f.sha256}"
        attrs = f'href="{html.escape(href)}"'
        if f.requires_python:
            attrs += f' data-requires-python="{html.escape(f.requires_python)}"'
        anchors.append(f"<a {attrs}>{html.escape(posixpath.basename(f.path))}</a>")
    return page, _page(f"Links for {simple_project_name(project)}", anchors)


def root_page(folder: str | None, projects: Iterable[str]) -> tuple[str, str]:
    names = sorted({simple_project_name(p) for p in projects})
    anchors = [f'<a href="{html.escape(n)}/">{html.escape(n)}</a>' for n in names]
    return f"{simple_index_dir(folder)}index.html", _page("Simple index", anchors)


def write_index(root: Path, folder: str | None, files: list[IndexedFile]) -> list[str]:
    """Write one index (a folder's, or the root one with folder None); returns the pages written."""
    by_project: dict[str, list[IndexedFile]] = {}
    for f in files:
        by_project.setdefault(simple_project_name(f.project), []).append(f)
    written = []
    for path, text in [root_page(folder, by_project), *(project_page(folder, p, fs) for p, fs in by_project.items())]:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written.append(path)
    return written
