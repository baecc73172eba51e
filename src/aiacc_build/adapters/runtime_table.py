"""The runtime's view of the framework adapters: `native/runtime/perseus/_frameworks.py`.

perseus-common (doctor, `import perseus`) and install_AIACC-Training.sh run without this tool, so what
they need of each adapter is written out as data: generated here, committed, and kept in sync by a test
(`aiacc-build frameworks runtime-table --check`). The install script gets the same rows at render time.
"""

from __future__ import annotations

import pprint
from dataclasses import asdict
from pathlib import Path

from ..paths import NATIVE_DIR
from . import all_adapters
from .base import FrameworkAdapter

RUNTIME_TABLE = NATIVE_DIR / "runtime" / "perseus" / "_frameworks.py"
HEADER = '''"""What perseus-common knows of each framework: generated from the build tool's framework adapters
(src/aiacc_build/adapters/) by `aiacc-build frameworks runtime-table --write`. Do not edit.

Each row: name, display_name, import_name, distributions (normalised names), distribution_pattern (a
regular expression over normalised names, or None), binding_distribution, selftest_module,
runtime_hook (a module `import perseus` installs, or None), honours_engine_variables (its runtime runs on
the native engine: perseus.config's ENGINE_RUNTIMES), build_variables (PERSEUS_* inputs of its binding's
build, not settings of a job), doctor_probe (Python code printing one JSON object of the framework's build
facts), installer (how the install script finds its CUDA).
"""

'''


def runtime_row(adapter: FrameworkAdapter) -> dict[str, object]:
    """One framework's row, plain data (Python 3.6 can read it)."""
    return {
        "name": adapter.name,
        "display_name": adapter.display_name,
        "import_name": adapter.import_name,
        "distributions": list(adapter.distributions),
        "distribution_pattern": adapter.distribution_pattern,
        "binding_distribution": adapter.binding_distribution,
        "selftest_module": adapter.selftest_module,
        "runtime_hook": adapter.runtime_hook,
        "honours_engine_variables": adapter.honours_engine_variables,
        "build_variables": list(adapter.build_variables),
        "doctor_probe": adapter.doctor_probe.strip("\n") + "\n",
        "installer": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(adapter.installer).items()},
    }


def runtime_rows() -> list[dict[str, object]]:
    return [runtime_row(a) for a in all_adapters()]


def render_runtime_table() -> str:
    body = pprint.pformat(runtime_rows(), indent=1, width=110, sort_dicts=False)
    return f"{HEADER}FRAMEWORKS = {body}\n"


def stale_runtime_table(path: Path = RUNTIME_TABLE) -> bool:
    return not path.is_file() or path.read_text(encoding="utf-8") != render_runtime_table()


def write_runtime_table(path: Path = RUNTIME_TABLE) -> bool:
    """Write the table when it differs; True when it was written."""
    if not stale_runtime_table(path):
        return False
    path.write_text(render_runtime_table(), encoding="utf-8")
    return True
