import sys

from perseus_harness import SOURCE_PATHS

for path in reversed(SOURCE_PATHS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
