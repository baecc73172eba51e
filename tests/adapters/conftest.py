import sys
from pathlib import Path

# the build tests' release (tests/wheels/wheels_testkit.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wheels"))
