"""The build steps the local driver and the CI workflow share, addressed the way a CI job sees them:
a wheel file and the release it belongs to (`aiacc-build wheel ...`, see wheel_cli.py).

The local driver calls repair_and_retag / build_common / the self-test command directly; the CI
job's cibuildwheel calls the same functions through the CLI inside its builder image, so the
auditwheel exclusion list, the re-tag rule and the self-test exist once.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from ..adapters import adapter_for
from ..errors import ConfigurationError, UnsupportedCellError
from ..model import Cell
from ..naming import wheel_filename, wheel_version


def cell_for_wheel(cells: tuple[Cell, ...] | list[Cell], wheel_name: str, cuda: str) -> Cell:
    """The release cell a freshly built (or repaired) binding wheel belongs to; `cuda` is `cpu` or `13.0`.

    Built wheels carry the build's own platform tag (linux_x86_64), so the match is on the
    distribution, version, Python tag and architecture."""
    try:
        name, version, _, tags = parse_wheel_filename(wheel_name)
    except InvalidWheelFilename as exc:
        raise ConfigurationError(f"{wheel_name!r} is not a wheel file name: {exc}") from None
    want_cuda = None if cuda == "cpu" else cuda
    interpreters = {t.interpreter for t in tags}
    candidates = [
        c for c in cells
        if adapter_for(c.framework).binding_distribution == name.replace("-", "_")
        and wheel_version(c) == str(version)
        and c.cuda == want_cuda
    ]
    for cell in candidates:
        published = parse_wheel_filename(wheel_filename(cell))[3]
        # a Python-independent cell's build carries the building interpreter's tag (cp310): re-tagged later
        same_python = cell.python is None or {t.interpreter for t in published} == interpreters
        if same_python and all(t.platform.endswith(cell.arch.value) for t in tags):
            return cell
    known = ", ".join(sorted({wheel_filename(c) for c in candidates})) or "none of this distribution and version"
    raise UnsupportedCellError(
        f"{wheel_name} (CUDA {cuda}) is no cell of release: its cells of that build publish {known}. "
        "Pass the --cuda the wheel was built for (cpu, 13.0, ...) and the release it was built for."
    )


def selftest_args(cell: Cell) -> list[str]:
    """The in-wheel self-test after the interpreter: `-m perseus.torch._selftest <release> <framework version>`."""
    return ["-m", adapter_for(cell.framework).selftest_module, cell.release_version, cell.framework_version]


def site_packages_of(python: str) -> Path:
    """The purelib folder of an interpreter (where its framework is installed)."""
    try:
        out = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ConfigurationError(f"cannot ask {python!r} for its site-packages ({exc}): pass an interpreter that runs") from None
    return Path(out)
