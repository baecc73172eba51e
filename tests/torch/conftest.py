import sys
from pathlib import Path

# perseus (runtime and torch binding) from this checkout's sources, as the multi-rank workers get it
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from perseus_harness import SOURCE_PATHS  # noqa: E402

for path in reversed(SOURCE_PATHS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
