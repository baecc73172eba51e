"""The commands this tool tells a person to run, built in one place so that each one is a complete,
valid command line (tests parse every one with the tool's own parser and run the cheap ones)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from .naming import INSTALL_SCRIPT_NAME
from .paths import DIST_DIR

TOOL = "aiacc-build"


@dataclass(frozen=True)
class Hint:
    argv: tuple[str, ...]  # the tool's arguments, without the tool's name

    def __str__(self) -> str:
        return shlex.join((TOOL, *self.argv))


def _dist(dist_dir: Path | None, option: str = "--dist") -> tuple[str, ...]:
    if dist_dir is None or Path(dist_dir).resolve() == DIST_DIR.resolve():
        return ()
    return (option, str(dist_dir))


def build_cells(release: str, selector: str, dist_dir: Path | None = None) -> Hint:
    return Hint(("build", "--release", release, *_dist(dist_dir), "--cells", selector))


def build(release: str, dist_dir: Path | None = None) -> Hint:
    return Hint(("build", "--release", release, *_dist(dist_dir)))


def render(release: str, out_dir: Path | None = None) -> Hint:
    return Hint(("render", "--release", release, *_dist(out_dir, "--out")))


def index(release: str, dist_dir: Path | None = None) -> Hint:
    return Hint(("index", "--release", release, *_dist(dist_dir)))


def serve(release: str, dist_dir: Path | None = None, port: int = 8000) -> Hint:
    return Hint(("serve", "--release", release, *_dist(dist_dir), "--port", str(port)))


def matrix_list(release: str) -> Hint:
    return Hint(("matrix", "list", "--release", release))


def toolkit_fetch(cuda: str) -> Hint:
    return Hint(("toolkit", "fetch", cuda))


def images_registry(port: int = 5000) -> Hint:
    return Hint(("images", "registry", "--port", str(port)))


def run_installer(mirror_url: str) -> str:
    """How an end user installs from a served mirror (a shell line, not this tool)."""
    url = f"{mirror_url.rstrip('/')}/{INSTALL_SCRIPT_NAME}"
    return f"curl -fsSLO {shlex.quote(url)} && bash {INSTALL_SCRIPT_NAME} --dry-run"


def next_steps(release: str, dist_dir: Path | None = None, port: int = 8000) -> list[str]:
    """What to do after `index`: serve the mirror, then run its installer."""
    return [
        f"serve the mirror:  {serve(release, dist_dir, port)}",
        f"run the installer: {run_installer(f'http://127.0.0.1:{port}')}  (then again without --dry-run)",
    ]


def main() -> None:
    """Print the next steps for the newest release in the default dist/ (the main job's last lines)."""
    from .matrix import default_release

    for line in next_steps(default_release()):
        print(line)


if __name__ == "__main__":
    main()
