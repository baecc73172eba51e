import sys
from pathlib import Path

# the build tests' cells and the session build of the local cell (tests/wheels/)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wheels"))

from local_build import local_build  # noqa: E402,F401
